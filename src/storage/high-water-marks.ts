// How many bytes an upload's streams hold. Every byte held is a socket buffer kept alive, and
// buffers that outlive a young collection wait for a major one: what is held per upload adds up
// across concurrent uploads and shows in the process's peak memory.

/**
 * A file write stream's buffer: writes of up to 1 MiB. With Node's default 16 KiB, writes are small
 * and hashing and writing overlap less (bench cases upload-large and upload-1m).
 */
export const FILE_HIGH_WATER_MARK = 1024 * 1024;

/**
 * The transforms in front of a file or the object store (the size meter, the resumable tap) pass
 * chunks on as they come: at 1 MiB a side they would hold megabytes per upload, which grows with the
 * uploads at once for no speed (bench case memory).
 */
export const PASS_HIGH_WATER_MARK = 64 * 1024;
