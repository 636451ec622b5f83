"""Loom code agents in Python: a handler function plus one call to ``run``.

Loom starts the script with this module on its PYTHONPATH and speaks JSON lines with it
(protocol ``loom.code-agent/1``, see docs/code-agents.md)::

    import loom_agent

    def handle(request, host):
        text = host.tool("file_read", {"path": "notes.txt"})
        return f"{request['agent']['name']} read {len(text)} characters"

    loom_agent.run(handle)

``request`` holds ``message``, ``agent`` ({id, name}), ``session`` (the history Loom stores)
and ``caller``. Return the reply's text; raise to answer with an error. ``print`` goes to Loom's
log (stdout carries the protocol), so does ``host.log``.
"""

import json
import sys

PROTOCOL = "loom.code-agent/1"


class HostCallError(Exception):
    """A host call Loom refused or that failed (a tool not granted, a model error...)."""


class Host:
    """What the script may ask of Loom while it answers a message, each as its agent."""

    def __init__(self, send, receive):
        self._send = send
        self._receive = receive
        self._next = 0

    def _call(self, call):
        self._next += 1
        self._send({"type": "host_call", "id": self._next, "call": call})
        answer = self._receive()
        if answer.get("type") != "host_result" or answer.get("id") != self._next:
            raise HostCallError("Loom answered out of turn: %r" % (answer,))
        result = answer["result"]
        if not result.get("ok"):
            raise HostCallError(result.get("error", "the host call failed"))
        return result.get("text", "")

    def tool(self, name, input=None):
        """Calls a tool the agent may call; returns its text, raises HostCallError when refused or failed."""
        return self._call({"call": "tool", "name": name, "input": input or {}})

    def llm(self, prompt, system=None):
        """One call on the agent's model, metered and under its quota; returns the text."""
        call = {"call": "llm", "prompt": prompt}
        if system is not None:
            call["system"] = system
        return self._call(call)

    def log(self, message, level="info"):
        """A line in Loom's log under the agent's name."""
        self._call({"call": "log", "message": str(message), "level": level})


def run(handler):
    """Answers Loom's messages with ``handler(request, host)`` until Loom closes stdin."""
    channel = sys.stdout
    # What the script prints goes to the log, not into the protocol.
    sys.stdout = sys.stderr

    def send(value):
        channel.write(json.dumps(value) + "\n")
        channel.flush()

    def receive():
        line = sys.stdin.readline()
        if line == "":
            sys.exit(0)
        return json.loads(line)

    host = Host(send, receive)
    while True:
        message = receive()
        if message.get("type") != "message":
            continue
        request = message["request"]
        try:
            text = handler(request, host)
            if text is None:
                text = ""
            reply = {"text": text if isinstance(text, str) else json.dumps(text)}
        except Exception as error:  # the message is answered with the error; the script goes on
            reply = {"error": "%s: %s" % (type(error).__name__, error)}
        send({"type": "reply", "reply": reply})
