/** The daemon: the kernel, its HTTP API and schedules, reachable through `LOOM_HOME/daemon.json`. */
export { daemonFilePath, isProcessAlive, readDaemonFile, staleDaemon, startedBeforeConfigChanged, writeDaemonFile } from './daemon-file.ts';
export { createDaemonApp, modelKeysIn, startDaemon } from './start-daemon.ts';
export type { DaemonAppOptions, RunningDaemon, StartDaemonOptions } from './start-daemon.ts';
export { releaseStartUpHeap } from './release-start-up-heap.ts';
export { logAiSdkWarnings } from './ai-sdk-warnings-to-log.ts';
