/**
 * A module hook for a process under test: `node --import <this file>` with `LOOM_TEST_MODULE_LOG`
 * set appends the URL of every module the process loads (ES modules and `require`d ones) to that
 * file, one a line, before the module runs. A test reads the file to see what a process has loaded
 * so far (test/architecture/lazy-sdks.test.ts). Without the variable it does nothing.
 */
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const log = process.env['LOOM_TEST_MODULE_LOG'];
if (log !== undefined && log !== '') {
  registerHooks({
    load(url, context, nextLoad) {
      appendFileSync(log, `${url}\n`);
      return nextLoad(url, context);
    },
  });
}
