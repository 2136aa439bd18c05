/**
 * Every command the limiter's scripts call (lua/window.ts, counters.ts, batch.ts, admit-all.ts),
 * with arguments of the shape the scripts give it: `KEY` stands for a key of the limiter. A test
 * holds this list to the scripts' `redis.call`s.
 */
export const SCRIPT_COMMANDS: readonly { readonly name: string; readonly args: readonly string[] }[] = [
  { name: 'time', args: [] },
  { name: 'get', args: ['KEY'] },
  { name: 'mget', args: ['KEY'] },
  { name: 'set', args: ['KEY', '1', 'PX', '1'] },
  { name: 'del', args: ['KEY'] },
  { name: 'incrby', args: ['KEY', '1'] },
  { name: 'decrby', args: ['KEY', '1'] },
  { name: 'pexpire', args: ['KEY', '1'] },
];

const luaArgs = (args: readonly string[]): string => args.map((a) => (a === 'KEY' ? ', k' : `, '${a}'`)).join('');

/**
 * Whether the user running it may run each command the scripts call on the key ARGV[1]
 * (`redis.acl_check_cmd`, Redis 7 and newer; it only asks the ACL, touching no key). Returns the
 * names of the commands refused, space-separated ('' when none is), or nil on a Redis without
 * `redis.acl_check_cmd` (nothing checked). Reads and writes nothing.
 */
export const ACL_CHECK_LUA = `if not redis.acl_check_cmd then return false end
local k = ARGV[1]
local refused = {}
${SCRIPT_COMMANDS.map((c) => `if not redis.acl_check_cmd('${c.name}'${luaArgs(c.args)}) then refused[#refused + 1] = '${c.name}' end`).join('\n')}
return table.concat(refused, ' ')
`;
