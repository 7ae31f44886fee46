// 05 - polymorphic pattern: basılı, e-kitap ve sesli kitap baskıları tek collection'da
db.editions.drop();
db.editions.insertMany([
  { _id: "26-print", bookId: 26, format: "print", price: Decimal128("390.50"),
    binding: "paperback", pageCount: 513, weightGrams: 520 },
  { _id: "26-ebook", bookId: 26, format: "ebook", price: Decimal128("210.00"),
    fileFormats: ["epub", "pdf"], drm: false },
  { _id: "26-audio", bookId: 26, format: "audiobook", price: Decimal128("320.00"),
    narrator: "Grace Hopper", durationMinutes: 1263 }
]);
// Ortak alanlarla tek sorgu; formata özgü alanlar yalnız ilgili document'te
printjson(db.editions.find({ bookId: 26 }, { _id: 0, format: 1, price: 1 }).sort({ price: 1 }).toArray());
print("ebooks without DRM:", db.editions.countDocuments({ format: "ebook", drm: false }));
