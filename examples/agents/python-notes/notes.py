"""A Loom code agent in Python: keeps notes in the agent's memory.

    note <text>   stores a note (memory_store, as this agent)
    notes         lists the notes (memory_recall)
    anything else is answered with how many notes there are

Every host call runs through Loom's tool runner, so the agent's [capabilities] decide.
"""

import json

import loom_agent


def recall_notes(host):
    """The notes stored so far: memory_recall answers one "key = value" line each."""
    text = host.tool("memory_recall", {"prefix": "self.note."})
    if text == "no memory matches":
        return []
    return [json.loads(line.split(" = ", 1)[1]) for line in text.splitlines()]


def handle(request, host):
    message = request["message"].strip()
    if message.startswith("note "):
        host.tool("memory_store", {"key": "self.note.%04d" % len(recall_notes(host)), "value": message[5:]})
        host.log("stored a note for %s" % request["caller"].get("name", request["caller"]["kind"]))
        return "Noted."
    found = recall_notes(host)
    if message == "notes":
        return "\n".join("- %s" % note for note in found) or "No notes yet."
    return "I keep notes: say \"note <text>\", or \"notes\" to list them (%d so far)." % len(found)


loom_agent.run(handle)
