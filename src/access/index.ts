/**
 * Who a caller is and what it may reach: API keys and their principals (roles and agent
 * patterns), below every door (HTTP, MCP, A2A, the CLI) so each asks the same questions.
 */
export { LOCAL_PRINCIPAL_NAME } from '../config/index.ts';
export { createAuthenticator, LOCAL_OWNER } from './create-authenticator.ts';
export { principalKey } from '../contracts/index.ts';
export type { Principal } from '../contracts/index.ts';
export { isLoopbackAddress } from './is-loopback-address.ts';
export { isLoopbackBind } from './is-loopback-bind.ts';
