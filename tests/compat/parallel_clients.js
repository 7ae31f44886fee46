// parallel_clients.js -- a Node driver helper for item6_concurrency.js: runs
// one scenario with several clients at once against $TAMGA_URI and prints
// its outcome as JSON (mongosh is single-threaded; this is not a case file).
//   node parallel_clients.js create_indexes | gridfs
const {MongoClient, GridFSBucket} = require('../clients/node_modules/mongodb');

async function main() {
	const uri = process.env.TAMGA_URI;
	const what = process.argv[2];
	const cs = await Promise.all([0, 1, 2, 3, 4, 5].map(() => new MongoClient(uri).connect()));
	let out;
	try {
		if (what === 'create_indexes') {
			out = await Promise.all(cs.map((c) => c.db('compat22').command({createIndexes: 'i6', indexes: [
				{key: {a: 1, b: 1}, name: 'a_1_b_1'}, {key: {c: 1}, name: 'c_1', unique: true}]})
				.then((r) => r.ok, (e) => 'error ' + e.code + ' ' + e.message)));
		} else if (what === 'gridfs') {
			out = await Promise.all(cs.map((c, i) => new Promise((res) => {
				const b = new GridFSBucket(c.db('compat22'), {bucketName: 'fs6', chunkSizeBytes: 1024});
				const up = b.openUploadStream('f' + i);
				up.on('finish', () => res('ok'));
				up.on('error', (e) => res('error ' + e.code + ' ' + e.message));
				up.end(Buffer.alloc(5000, 65 + i));
			})));
		}
	} finally {
		await Promise.all(cs.map((c) => c.close()));
	}
	process.stdout.write(JSON.stringify(out));
}
main().catch((e) => {
	process.stdout.write(JSON.stringify('failed: ' + e.message));
});
