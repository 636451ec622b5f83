/** The scripted model server is Loom's own (`loom model serve`); the tests use the same one. */
export { startScriptedModelServer } from '../../src/models/scripted-model-server.ts';
export type {
  RecordedRequest,
  ScriptedError,
  ScriptedFinishReason,
  ScriptedModelServer,
  ScriptedReply,
  ScriptedToolCall,
  ScriptStep,
} from '../../src/models/scripted-model-server.ts';
