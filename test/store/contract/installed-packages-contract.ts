import { describe, expect, it } from 'vitest';
import type { InstalledPackageRecord } from '../../../src/contracts/index.ts';
import { StoreConflictError } from '../../../src/errors/index.ts';
import type { StoreContext } from './fixtures.ts';

const record = (slug: string, changes: Partial<InstalledPackageRecord> = {}): InstalledPackageRecord => ({
  slug,
  qualifiedName: `@acme/agents/${slug}`,
  version: '1.2.0',
  agentId: `agent-${slug}`,
  source: '/srv/packages/briefing',
  persona: 'You are "the briefer".\nBe brief — très.',
  agentJson: { workflows: { morning: { trigger: { type: 'schedule', cron: '0 7 * * 1-5' } } } },
  loomToml: { package: { name: `@acme/agents/${slug}`, version: '1.2.0' } },
  settings: ['workflows.morning.trigger.cron=0 8 * * *'],
  skills: { '@acme/skills/notes': { prompt: '# Skill: notes', requires: ['@acme/skills/base'] } },
  installedAt: 1_000,
  lastFires: {},
  ...changes,
});

/** The installed-packages part of the Store contract. */
export function describeInstalledPackagesContract(context: StoreContext): void {
  describe('packages', () => {
    it('stores a package and reads it back exactly; lists by slug; refuses a second with the slug', async () => {
      await context.store.packages.create(record('zeta', { qualifiedName: null }));
      await context.store.packages.create(record('alpha'));
      expect(await context.store.packages.get('alpha')).toEqual(record('alpha'));
      expect((await context.store.packages.list()).map((entry) => entry.slug)).toEqual(['alpha', 'zeta']);
      expect(await context.store.packages.get('missing')).toBeUndefined();
      await expect(context.store.packages.create(record('alpha'))).rejects.toBeInstanceOf(StoreConflictError);
    });

    it('records the last fire of each binding, including names that need quoting', async () => {
      await context.store.packages.create(record('alpha'));
      await context.store.packages.setLastFire('alpha', 'morning', 5_000);
      await context.store.packages.setLastFire('alpha', 'health.check"x', 6_000);
      await context.store.packages.setLastFire('alpha', 'morning', 7_000);
      await context.store.packages.setLastFire('missing', 'morning', 7_000);
      expect((await context.store.packages.get('alpha'))?.lastFires).toEqual({ morning: 7_000, 'health.check"x': 6_000 });
    });

    it('deletes a package; deleting a missing one does nothing', async () => {
      await context.store.packages.create(record('alpha'));
      await context.store.packages.delete('alpha');
      await context.store.packages.delete('alpha');
      expect(await context.store.packages.list()).toEqual([]);
    });
  });
}
