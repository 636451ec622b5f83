// Small JSON and memory helpers for Loom code agents on the core wasm ABI (enough for this example).

/** Text copied into fresh memory, as the ABI returns it: pointer << 32 | length. */
export function pack(text: string): i64 {
  const buffer = String.UTF8.encode(text);
  const length = buffer.byteLength;
  const pointer = heap.alloc(<usize>length);
  memory.copy(pointer, changetype<usize>(buffer), <usize>length);
  return (i64(pointer) << 32) | i64(length);
}

export function unpack(packed: i64): string {
  return String.UTF8.decodeUnsafe(<usize>(packed >>> 32), <usize>(packed & 0xffffffff));
}

/** The string value of the first "key" in a JSON text (enough for the request's "message"). */
export function stringField(json: string, key: string): string {
  const marker = '"' + key + '":"';
  let at = json.indexOf(marker);
  if (at < 0) return "";
  at += marker.length;
  let out = "";
  while (at < json.length) {
    const char = json.charAt(at);
    if (char == '"') break;
    if (char == "\\") {
      at += 1;
      const escaped = json.charAt(at);
      if (escaped == "n") out += "\n";
      else if (escaped == "t") out += "\t";
      else if (escaped == "u") {
        out += String.fromCharCode(<i32>parseInt(json.substr(at + 1, 4), 16));
        at += 4;
      } else out += escaped;
    } else out += char;
    at += 1;
  }
  return out;
}

/** `text` as a JSON string. */
export function quote(text: string): string {
  let out = '"';
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code == 34) out += '\\"';
    else if (code == 92) out += "\\\\";
    else if (code == 10) out += "\\n";
    else if (code < 32) out += "\\u00" + (code < 16 ? "0" : "") + code.toString(16);
    else out += text.charAt(index);
  }
  return out + '"';
}

