// bookshops.js -- the bookstore seed's shops on a map, with the official
// Node driver against a running tamgad (node examples/geo/bookshops.js
// [uri]): a 2dsphere index on each shop's location, "shops within 5 km of
// a point, nearest first" as a find with $near and as an aggregation with
// $geoNear (distances in metres, then km), and "which delivery zone is
// this address in" with $geoIntersects.  See docs/geo.md.
'use strict';
const path = require('node:path');
const { MongoClient } = require(path.join(__dirname, '../../tests/clients/node_modules/mongodb'));

const uri = process.argv[2] || process.env.TAMGA_URI || 'mongodb://127.0.0.1:27017';

async function main() {
	const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	await client.connect();
	try {
		const db = client.db('bookstore_geo');
		await db.dropDatabase();
		const shops = db.collection('shops');
		await shops.createIndex({ location: '2dsphere' });
		await shops.insertMany([
			{ _id: 'kreuzberg', name: 'Books of Kreuzberg', location: { type: 'Point', coordinates: [13.4030, 52.4990] } },
			{ _id: 'mitte', name: 'Mitte Antiquariat', location: { type: 'Point', coordinates: [13.4010, 52.5200] } },
			{ _id: 'prenzlauer', name: 'Prenzlauer Papers', location: { type: 'Point', coordinates: [13.4240, 52.5390] } },
			{ _id: 'charlottenburg', name: 'Charlottenburg Classics', location: { type: 'Point', coordinates: [13.3040, 52.5160] } },
			{ _id: 'potsdam', name: 'Potsdam Pages', location: { type: 'Point', coordinates: [13.0640, 52.3910] } },
		]);
		const here = { type: 'Point', coordinates: [13.4050, 52.5200] };   // Alexanderplatz

		// find: shops within 5 km, nearest first
		const near = await shops.find({ location: { $near: { $geometry: here, $maxDistance: 5000 } } })
			.project({ _id: 0, name: 1 }).toArray();
		console.log('within 5 km, nearest first:', near.map((s) => s.name).join(', '));

		// aggregation: the same with the distance, in km
		const withDist = await shops.aggregate([
			{ $geoNear: { near: here, distanceField: 'km', maxDistance: 5000, distanceMultiplier: 0.001 } },
			{ $project: { _id: 0, name: 1, km: { $round: ['$km', 2] } } },
		]).toArray();
		for (const s of withDist)
			console.log(`  ${s.name}: ${s.km} km`);

		// delivery zones: which zone holds this address?
		const zones = db.collection('zones');
		await zones.createIndex({ area: '2dsphere' });
		await zones.insertMany([
			{ _id: 'centre', area: { type: 'Polygon', coordinates: [[[13.35, 52.49], [13.45, 52.49], [13.45, 52.55], [13.35, 52.55], [13.35, 52.49]]] } },
			{ _id: 'west', area: { type: 'Polygon', coordinates: [[[13.25, 52.49], [13.35, 52.49], [13.35, 52.55], [13.25, 52.55], [13.25, 52.49]]] } },
		]);
		const zone = await zones.findOne({ area: { $geoIntersects: { $geometry: { type: 'Point', coordinates: [13.30, 52.52] } } } });
		console.log('delivery zone of [13.30, 52.52]:', zone._id);
		return { near: near.map((s) => s.name), withDist, zone: zone._id };
	} finally {
		await client.close();
	}
}

module.exports = { main };
if (require.main === module)
	main().catch((e) => { console.error(e); process.exit(1); });
