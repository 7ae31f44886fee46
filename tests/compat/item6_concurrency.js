// item6_concurrency.js -- issue 22 item 6: concurrency corners, driven by
// six Node driver clients at once (parallel_clients.js, run from here as a
// child process: mongosh itself is single-threaded).
{
	const cp = require('child_process');
	const parallel = (what) => JSON.parse(cp.execFileSync(process.execPath,
		[__dirname + '/parallel_clients.js', what], {env: process.env, encoding: 'utf8', timeout: 60000}));

	compat(6, 'identical createIndexes from six clients at once all succeed', () => {
		cdb.i6.drop();
		eq(parallel('create_indexes'), [1, 1, 1, 1, 1, 1]);
		eq(cdb.i6.getIndexes().map((i) => i.name).sort(), ['_id_', 'a_1_b_1', 'c_1']);
	});
	compat(6, 'parallel GridFS uploads from six clients all land', () => {
		cdb.fs6.files.drop();
		cdb.fs6.chunks.drop();
		eq(parallel('gridfs'), ['ok', 'ok', 'ok', 'ok', 'ok', 'ok']);
		eq(cdb.fs6.files.countDocuments(), 6);
		eq(cdb.fs6.chunks.countDocuments(), 30);
		const f = cdb.fs6.files.findOne({filename: 'f2'});
		eq(cmdOk(cdb, {filemd5: f._id, root: 'fs6'}).numChunks, 5);
	});
}
