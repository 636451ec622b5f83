import { createServer, type Server, type Socket } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** A message in the fake mailbox. */
interface StoredMail {
  uid: number;
  source: string;
  seen: boolean;
}

/**
 * A mailbox on loopback that speaks the part of IMAP4rev1 a mail client needs to read new mail:
 * LOGIN, LIST, SELECT/EXAMINE, (UID) SEARCH, (UID) FETCH of whole messages, (UID) STORE of flags,
 * NOOP, LOGOUT. No TLS and no IDLE (the client polls). No maintained IMAP server is on npm, so this
 * is the tests' own; ImapFlow is the real client it answers.
 */
export interface FakeImapServer {
  port: number;
  /** Adds a message (RFC 5322 text) to INBOX, unseen; returns its UID. */
  deliver(source: string): number;
  /** Whether the message with `uid` is marked \Seen. */
  seen(uid: number): boolean;
  close(): Promise<void>;
}

function parseSet(set: string, all: readonly number[]): number[] {
  const max = Math.max(0, ...all);
  const chosen = new Set<number>();
  for (const part of set.split(',')) {
    const [from, to] = part.split(':');
    const start = from === '*' ? max : Number(from);
    const end = to === undefined ? start : to === '*' ? max : Number(to);
    for (const value of all) if (value >= Math.min(start, end) && value <= Math.max(start, end)) chosen.add(value);
  }
  return [...chosen];
}

export async function startFakeImapServer(credentials: { user: string; password: string }): Promise<FakeImapServer> {
  const mails: StoredMail[] = [];
  let nextUid = 1;
  const sockets = new Set<Socket>();

  function handle(socket: Socket, line: string, state: { authenticated: boolean; selected: boolean }): void {
    const match = /^(\S+) (?:(UID) )?(\S+)(?: (.*))?$/i.exec(line);
    if (match === null) return;
    const [, tag = '*', uid, rawCommand = '', args = ''] = match;
    const command = rawCommand.toUpperCase();
    const write = (text: string): boolean => socket.write(`${text}\r\n`);
    const ok = (text = `${command} completed`): boolean => write(`${tag} OK ${text}`);
    const byUid = uid !== undefined;
    switch (command) {
      case 'CAPABILITY':
        write('* CAPABILITY IMAP4rev1 UIDPLUS');
        ok();
        return;
      case 'LOGIN': {
        const [user, password] = [...args.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((part) => part[1] ?? part[2]);
        if (user !== credentials.user || password !== credentials.password) {
          write(`${tag} NO [AUTHENTICATIONFAILED] Invalid credentials`);
          return;
        }
        state.authenticated = true;
        ok('[CAPABILITY IMAP4rev1 UIDPLUS] Logged in');
        return;
      }
      case 'LIST':
        write('* LIST (\\HasNoChildren) "/" "INBOX"');
        ok();
        return;
      case 'SELECT':
      case 'EXAMINE':
        state.selected = true;
        write('* FLAGS (\\Seen \\Answered \\Flagged \\Deleted \\Draft)');
        write(`* ${mails.length} EXISTS`);
        write('* 0 RECENT');
        write('* OK [UIDVALIDITY 7] UIDs valid');
        write(`* OK [UIDNEXT ${nextUid}] Predicted next UID`);
        ok(`[${command === 'SELECT' ? 'READ-WRITE' : 'READ-ONLY'}] ${command} completed`);
        return;
      case 'SEARCH': {
        const unseen = /UNSEEN/i.test(args);
        const found = mails.map((mail, index) => ({ mail, seq: index + 1 })).filter(({ mail }) => !unseen || !mail.seen);
        write(`* SEARCH${found.map(({ mail, seq }) => ` ${byUid ? mail.uid : seq}`).join('')}`);
        ok();
        return;
      }
      case 'FETCH': {
        const [set = '', ...rest] = args.split(' ');
        const items = rest.join(' ');
        const keys = mails.map((mail, index) => (byUid ? mail.uid : index + 1));
        for (const key of parseSet(set, keys)) {
          const index = byUid ? mails.findIndex((mail) => mail.uid === key) : key - 1;
          const mail = mails[index];
          if (mail === undefined) continue;
          const parts = [`UID ${mail.uid}`, `FLAGS (${mail.seen ? '\\Seen' : ''})`];
          if (/BODY(\.PEEK)?\[\]|RFC822\b/i.test(items)) parts.push(`BODY[] {${Buffer.byteLength(mail.source)}}\r\n${mail.source}`);
          if (/RFC822\.SIZE/i.test(items)) parts.push(`RFC822.SIZE ${Buffer.byteLength(mail.source)}`);
          write(`* ${index + 1} FETCH (${parts.join(' ')})`);
        }
        ok();
        return;
      }
      case 'STORE': {
        const [set = '', action = '', ...flags] = args.split(' ');
        const keys = mails.map((mail, index) => (byUid ? mail.uid : index + 1));
        const seen = flags.join(' ').includes('\\Seen');
        for (const key of parseSet(set, keys)) {
          const index = byUid ? mails.findIndex((mail) => mail.uid === key) : key - 1;
          const mail = mails[index];
          if (mail === undefined || !seen) continue;
          mail.seen = action.toUpperCase().startsWith('+') ? true : action.toUpperCase().startsWith('-') ? false : seen;
          if (!/SILENT/i.test(action)) write(`* ${index + 1} FETCH (UID ${mail.uid} FLAGS (${mail.seen ? '\\Seen' : ''}))`);
        }
        ok();
        return;
      }
      case 'NOOP':
      case 'CHECK':
        if (state.selected) write(`* ${mails.length} EXISTS`);
        ok();
        return;
      case 'CLOSE':
      case 'UNSELECT':
        state.selected = false;
        ok();
        return;
      case 'LOGOUT':
        write('* BYE Logging out');
        ok();
        socket.end();
        return;
      default:
        write(`${tag} BAD Unknown command ${command}`);
    }
  }

  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    const state = { authenticated: false, selected: false };
    let buffer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      let end = buffer.indexOf('\r\n');
      while (end !== -1) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        handle(socket, line, state);
        end = buffer.indexOf('\r\n');
      }
    });
    socket.write('* OK [CAPABILITY IMAP4rev1 UIDPLUS] Fake IMAP ready\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();

  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    deliver(source) {
      const uid = nextUid++;
      mails.push({ uid, source: source.replace(/\r?\n/g, '\r\n'), seen: false });
      return uid;
    },
    seen: (uid) => mails.find((mail) => mail.uid === uid)?.seen === true,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** An SMTP server on loopback (Nodemailer's `smtp-server`) that keeps what it is sent, parsed. */
export interface FakeSmtpServer {
  port: number;
  readonly received: ParsedMail[];
  close(): Promise<void>;
}

export async function startFakeSmtpServer(credentials: { user: string; password: string }): Promise<FakeSmtpServer> {
  const received: ParsedMail[] = [];
  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    authOptional: false,
    onAuth(auth, _session, callback) {
      if (auth.username === credentials.user && auth.password === credentials.password) callback(null, { user: auth.username });
      else callback(new Error('Invalid credentials'));
    },
    onData(stream, _session, callback) {
      simpleParser(stream)
        .then((mail) => {
          received.push(mail);
          callback();
        })
        .catch((error: unknown) => callback(error as Error));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
