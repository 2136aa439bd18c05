/**
 * The most bytes Linux writes to a pipe in one piece (PIPE_BUF): a longer write may be split, a
 * write of another process landing in between. The access log's records and the operational log's
 * lines, from every process of the instance, each stay within it.
 */
export const PIPE_BUF = 4096;
