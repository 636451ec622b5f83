import { describe, expect, it } from 'vitest';
import type { ChannelMessageRecord } from '../../../src/contracts/index.ts';
import type { StoreContext } from './fixtures.ts';

const message = (platformId: string, changes: Partial<ChannelMessageRecord> = {}): ChannelMessageRecord => ({
  channel: 'tg',
  platformId,
  userId: '42',
  userName: 'Ada — ünïcode',
  conversationId: '-100',
  conversationKind: 'group',
  thread: '7',
  mentioned: true,
  text: 'hello "there"',
  status: 'received',
  note: null,
  receivedAt: 1_000,
  updatedAt: 1_000,
  ...changes,
});

/** The channels part of the Store contract. */
export function describeChannelsContract(context: StoreContext): void {
  describe('channels', () => {
    it('stores a message once per platform id, reads it back exactly, settles it, and lists what is unsettled oldest first', async () => {
      const { channels } = context.store;
      expect(await channels.receive(message('m1'))).toBe(true);
      expect(await channels.receive(message('m1', { text: 'a second delivery' }))).toBe(false);
      expect(await channels.receive(message('m2', { receivedAt: 2_000, thread: null, userName: null, mentioned: false, conversationKind: 'direct' }))).toBe(
        true,
      );
      expect(await channels.receive(message('m1', { channel: 'other' }))).toBe(true);
      expect(await channels.recent('tg', 10)).toEqual([
        message('m2', { receivedAt: 2_000, thread: null, userName: null, mentioned: false, conversationKind: 'direct' }),
        message('m1'),
      ]);
      await channels.settle('tg', 'm1', 'answered', 'the reply', 3_000);
      expect(await channels.unsettled('tg')).toMatchObject([{ platformId: 'm2' }]);
      expect((await channels.recent('tg', 1))[0]).toMatchObject({ platformId: 'm2' });
      expect((await channels.recent('tg', 2))[1]).toMatchObject({ platformId: 'm1', status: 'answered', note: 'the reply', updatedAt: 3_000 });
    });

    it('amends a message only while it waits: a new text, or withdrawn', async () => {
      const { channels } = context.store;
      await channels.receive(message('m1'));
      await channels.receive(message('m2'));
      expect(await channels.amend('tg', 'm1', { text: 'edited' }, 2_000)).toBe(true);
      expect(await channels.get('tg', 'm1')).toEqual(message('m1', { text: 'edited', updatedAt: 2_000 }));
      expect(await channels.amend('tg', 'm2', { withdrawn: 'deleted' }, 2_000)).toBe(true);
      expect(await channels.get('tg', 'm2')).toMatchObject({ status: 'ignored', note: 'deleted' });
      await channels.settle('tg', 'm1', 'answered', 'reply', 3_000);
      expect(await channels.amend('tg', 'm1', { text: 'too late' }, 4_000)).toBe(false);
      expect(await channels.amend('tg', 'nope', { text: 'x' }, 4_000)).toBe(false);
      expect((await channels.get('tg', 'm1'))?.text).toBe('edited');
      expect(await channels.get('tg', 'nope')).toBeUndefined();
    });

    it('takes a message up for answering while it waits, as it stands; again by the same node; not once settled', async () => {
      const { channels } = context.store;
      await channels.receive(message('m1'));
      await channels.amend('tg', 'm1', { text: 'edited' }, 2_000);
      expect(await channels.claim('tg', 'm1')).toMatchObject({ message: message('m1', { text: 'edited', updatedAt: 2_000 }), held: true });
      expect((await channels.claim('tg', 'm1'))?.held).toBe(true);
      await channels.settle('tg', 'm1', 'answered', 'reply', 3_000);
      expect(await channels.claim('tg', 'm1')).toMatchObject({ message: { status: 'answered' }, held: false });
      expect(await channels.claim('tg', 'nope')).toBeUndefined();
      // Given up: nothing changes of a settled message.
      await channels.release('tg', 'm1');
      expect(await channels.get('tg', 'm1')).toMatchObject({ status: 'answered', note: 'reply' });
    });

    it('leaves a message another node alive (or stopping) holds to it, naming it; takes it from a node gone silent, or once given up', async (test) => {
      const { otherNode } = context;
      if (otherNode === undefined) return test.skip('alone (SQLite), every message waiting is this node’s');
      const { channels } = context.store;
      const alive = await otherNode('alive');
      for (const id of ['m1', 'm2', 'm3', 'm4']) await channels.receive(message(id, { receivedAt: Number(id.slice(1)) }));

      const taken = await alive.channels.claim('tg', 'm1');
      expect(taken).toMatchObject({ held: true });
      expect(await channels.claim('tg', 'm1')).toMatchObject({ message: { status: 'received' }, held: false, claimedBy: taken?.claimedBy });
      expect(await alive.channels.claim('tg', 'm1')).toMatchObject({ held: true, claimedBy: taken?.claimedBy });
      // Listed to this node as not taken up here; its own are not.
      expect((await channels.unsettled('tg', { notClaimedHere: true })).map((entry) => entry.platformId)).toEqual(['m1', 'm2', 'm3', 'm4']);
      const mine = await channels.claim('tg', 'm2');
      expect(mine?.held).toBe(true);
      expect((await channels.unsettled('tg', { notClaimedHere: true })).map((entry) => entry.platformId)).toEqual(['m1', 'm3', 'm4']);
      expect((await alive.channels.claim('tg', 'm2'))?.claimedBy).toBe(mine?.claimedBy);
      expect((await channels.unsettled('tg')).map((entry) => entry.platformId)).toEqual(['m1', 'm2', 'm3', 'm4']);

      // Given up by its node (its answer gave up): the other takes it at once. Another node's claim is not given up.
      await channels.release('tg', 'm1');
      expect((await channels.claim('tg', 'm1'))?.held).toBe(false);
      await channels.release('tg', 'm2');
      expect(await alive.channels.claim('tg', 'm2')).toMatchObject({ held: true, claimedBy: taken?.claimedBy });
      await alive.channels.release('tg', 'm1');
      expect((await channels.claim('tg', 'm1'))?.held).toBe(true);

      // A node gone silent holds nothing; one shown stopped whose heartbeat is fresh (ending its
      // answers) holds its claims until it gives them all up.
      const silent = await otherNode('silent');
      const stopped = await otherNode('stopped');
      expect((await silent.channels.claim('tg', 'm3'))?.held).toBe(true);
      const stopping = await stopped.channels.claim('tg', 'm4');
      expect(stopping?.held).toBe(true);
      expect(await channels.claim('tg', 'm3')).toMatchObject({ held: true, claimedBy: mine?.claimedBy });
      expect(await channels.claim('tg', 'm4')).toMatchObject({ held: false, claimedBy: stopping?.claimedBy });
      expect((await silent.channels.claim('tg', 'm3'))?.held).toBe(false);
      await stopped.channels.releaseAll();
      expect(await channels.claim('tg', 'm4')).toMatchObject({ held: true, claimedBy: mine?.claimedBy });
      // Given up all at once: only this node's, only those not settled.
      await channels.settle('tg', 'm4', 'answered', 'reply', 3_000);
      await channels.releaseAll();
      expect(await channels.claim('tg', 'm2')).toMatchObject({ held: false, claimedBy: taken?.claimedBy });
      expect(await alive.channels.claim('tg', 'm3')).toMatchObject({ held: true, claimedBy: taken?.claimedBy });
      expect(await alive.channels.claim('tg', 'm4')).toMatchObject({ message: { status: 'answered' }, held: false, claimedBy: mine?.claimedBy });
    });

    it('keeps one waiting pairing per person, approves it by code once, and finds it', async () => {
      const { channels } = context.store;
      await channels.requestPairing({ code: 'AAAAAA', channel: 'tg', userId: '42', userName: 'Ada', createdAt: 1, approvedAt: null });
      await channels.requestPairing({ code: 'BBBBBB', channel: 'tg', userId: '42', userName: 'Ada', createdAt: 2, approvedAt: null });
      expect((await channels.pairings('tg')).map((pairing) => pairing.code)).toEqual(['BBBBBB']);
      expect(await channels.approvePairing('AAAAAA', 5)).toBeUndefined();
      expect(await channels.approvePairing('BBBBBB', 5)).toEqual({ code: 'BBBBBB', channel: 'tg', userId: '42', userName: 'Ada', createdAt: 2, approvedAt: 5 });
      // Approving again changes nothing.
      expect((await channels.approvePairing('BBBBBB', 9))?.approvedAt).toBe(5);
      expect((await channels.pairingOf('tg', '42'))?.approvedAt).toBe(5);
      // A later request does not drop an approved pairing.
      await channels.requestPairing({ code: 'CCCCCC', channel: 'tg', userId: '42', userName: 'Ada', createdAt: 10, approvedAt: null });
      expect((await channels.pairingOf('tg', '42'))?.code).toBe('BBBBBB');
      expect(await channels.pairingOf('other', '42')).toBeUndefined();
      expect((await channels.pairings()).map((pairing) => pairing.code)).toEqual(['CCCCCC', 'BBBBBB']);
    });
  });
}
