#!/usr/bin/env python3
"""gen_data.py -- writes examples/bookstore/data/*.json (canonical Extended JSON,
one document per line).  The files are committed; run this only to change the
data set.  Deterministic (fixed random seed).

The numbers the seed (../shared/seeds/000_*.txt) prints that depend on the data
are designed in here:
  * Dune (_id 26) has exactly 5 reviews: the legacy one (customer 39, rating the
    string "5", _id 6af85e4c5a7edf5858284d0c) and 4 others rated 5+4+4+4, the
    latest of them by Adele Goldberg at 2026-05-04T01:49:15Z.  Once the
    validation walk-through has turned "5" into 5: count 5, sum 22, average 4.4.
  * reviews exist for books 1..58 only -> "books with rating: 58".
  * 379 orders, 109 of them Delivered/Cancelled before 2025-07-01.
  * 40 customers, all at schema version 1 (city/country at the root); customer 2
    is Alan (Berlin, DE), customer 3 lives in Istanbul.
  * every review except the legacy one satisfies the seed's reviewSchema.
"""
import json
import os
import random
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data")
rnd = random.Random(20260630)


def i32(v):
    return {"$numberInt": str(v)}


def dbl(v):
    return {"$numberDouble": repr(float(v))}


def date(dt):
    return {"$date": {"$numberLong": str(int(dt.replace(tzinfo=timezone.utc).timestamp() * 1000))}}


def oid(h):
    return {"$oid": h}


def write(name, docs):
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False, separators=(", ", ": ")) + "\n")


# ---------------------------------------------------------------- books
TITLES = [
    ("The Left Hand of Darkness", "Ursula K. Le Guin", 1969, "science fiction"),
    ("Foundation", "Isaac Asimov", 1951, "science fiction"),
    ("Neuromancer", "William Gibson", 1984, "science fiction"),
    ("Solaris", "Stanisław Lem", 1961, "science fiction"),
    ("The Dispossessed", "Ursula K. Le Guin", 1974, "science fiction"),
    ("Hyperion", "Dan Simmons", 1989, "science fiction"),
    ("Snow Crash", "Neal Stephenson", 1992, "science fiction"),
    ("Kindred", "Octavia E. Butler", 1979, "science fiction"),
    ("The Martian Chronicles", "Ray Bradbury", 1950, "science fiction"),
    ("Fahrenheit 451", "Ray Bradbury", 1953, "science fiction"),
    ("Brave New World", "Aldous Huxley", 1932, "classic"),
    ("Nineteen Eighty-Four", "George Orwell", 1949, "classic"),
    ("The Stranger", "Albert Camus", 1942, "classic"),
    ("Crime and Punishment", "Fyodor Dostoevsky", 1866, "classic"),
    ("Anna Karenina", "Leo Tolstoy", 1878, "classic"),
    ("Madame Bovary", "Gustave Flaubert", 1857, "classic"),
    ("Middlemarch", "George Eliot", 1871, "classic"),
    ("Moby-Dick", "Herman Melville", 1851, "classic"),
    ("The Trial", "Franz Kafka", 1925, "classic"),
    ("Ulysses", "James Joyce", 1922, "classic"),
    ("Mrs Dalloway", "Virginia Woolf", 1925, "classic"),
    ("My Name Is Red", "Orhan Pamuk", 1998, "novel"),
    ("The Time Regulation Institute", "Ahmet Hamdi Tanpınar", 1961, "novel"),
    ("Memed, My Hawk", "Yaşar Kemal", 1955, "novel"),
    ("Madonna in a Fur Coat", "Sabahattin Ali", 1943, "novel"),
    ("Dune", "Frank Herbert", 1965, "science fiction"),
    ("The Name of the Rose", "Umberto Eco", 1980, "novel"),
    ("One Hundred Years of Solitude", "Gabriel García Márquez", 1967, "novel"),
    ("The Master and Margarita", "Mikhail Bulgakov", 1967, "novel"),
    ("Beloved", "Toni Morrison", 1987, "novel"),
    ("Things Fall Apart", "Chinua Achebe", 1958, "novel"),
    ("The Remains of the Day", "Kazuo Ishiguro", 1989, "novel"),
    ("Invisible Cities", "Italo Calvino", 1972, "novel"),
    ("Pedro Páramo", "Juan Rulfo", 1955, "novel"),
    ("The Structure of Scientific Revolutions", "Thomas S. Kuhn", 1962, "non-fiction"),
    ("Gödel, Escher, Bach", "Douglas Hofstadter", 1979, "non-fiction"),
    ("The Selfish Gene", "Richard Dawkins", 1976, "non-fiction"),
    ("A Brief History of Time", "Stephen Hawking", 1988, "non-fiction"),
    ("Silent Spring", "Rachel Carson", 1962, "non-fiction"),
    ("The Double Helix", "James D. Watson", 1968, "non-fiction"),
    ("Sapiens", "Yuval Noah Harari", 2011, "non-fiction"),
    ("Thinking, Fast and Slow", "Daniel Kahneman", 2011, "non-fiction"),
    ("The Mythical Man-Month", "Frederick P. Brooks Jr.", 1975, "computing"),
    ("Structure and Interpretation of Computer Programs", "Harold Abelson", 1985, "computing"),
    ("The C Programming Language", "Brian W. Kernighan", 1978, "computing"),
    ("The Art of Computer Programming", "Donald E. Knuth", 1968, "computing"),
    ("Designing Data-Intensive Applications", "Martin Kleppmann", 2017, "computing"),
    ("Code Complete", "Steve McConnell", 1993, "computing"),
    ("The Pragmatic Programmer", "Andrew Hunt", 1999, "computing"),
    ("Refactoring", "Martin Fowler", 1999, "computing"),
    ("Clean Architecture", "Robert C. Martin", 2017, "computing"),
    ("Database System Concepts", "Abraham Silberschatz", 1986, "computing"),
    ("Introduction to Algorithms", "Thomas H. Cormen", 1990, "computing"),
    ("Hackers", "Steven Levy", 1984, "computing"),
    ("The Soul of a New Machine", "Tracy Kidder", 1981, "computing"),
    ("The Hobbit", "J. R. R. Tolkien", 1937, "fantasy"),
    ("A Wizard of Earthsea", "Ursula K. Le Guin", 1968, "fantasy"),
    ("The Lord of the Rings", "J. R. R. Tolkien", 1954, "fantasy"),
    ("Piranesi", "Susanna Clarke", 2020, "fantasy"),
    ("The Night Circus", "Erin Morgenstern", 2011, "fantasy"),
]
assert len(TITLES) == 60 and TITLES[25][0] == "Dune"

# Dune's description is sized so that, with the rating summary and the three
# recent reviews the scripts add, the book is 808 bytes (the seed's bsonsize).
DUNE_DESCRIPTION = ("Set on the desert planet Arrakis, the only source of the spice melange, Dune follows young "
                    "Paul Atreides as his family takes control of the planet and its Fremen rise with him.")

books = []
for n, (title, author, year, genre) in enumerate(TITLES, start=1):
    price = round(rnd.uniform(150, 650) * 2) / 2
    pages = rnd.randint(120, 1100)
    b = {"_id": i32(n), "title": title, "author": author, "year": i32(year), "genre": genre,
         "pages": i32(pages), "price": dbl(price), "stock": i32(rnd.randint(0, 40))}
    if n == 26:
        b["pages"] = i32(513)
        b["price"] = dbl(390.5)
        b["stock"] = i32(12)
        b["description"] = DUNE_DESCRIPTION
    books.append(b)

# ---------------------------------------------------------------- customers
PEOPLE = [
    ("Ada", "Lovelace", "London", "GB"),
    ("Alan", "Turing", "Berlin", "DE"),
    ("Cahit", "Arf", "Istanbul", "TR"),
    ("Edsger", "Dijkstra", "Amsterdam", "NL"),
    ("Barbara", "Liskov", "Boston", "US"),
    ("Donald", "Knuth", "Stanford", "US"),
    ("Adele", "Goldberg", "Palo Alto", "US"),
    ("Niklaus", "Wirth", "Zurich", "CH"),
    ("Frances", "Allen", "New York", "US"),
    ("John", "Backus", "Ankara", "TR"),
    ("Tony", "Hoare", "Oxford", "GB"),
    ("Radia", "Perlman", "Seattle", "US"),
    ("Ken", "Thompson", "Izmir", "TR"),
    ("Dennis", "Ritchie", "Munich", "DE"),
    ("Karen", "Spärck Jones", "Cambridge", "GB"),
    ("Leslie", "Lamport", "Hamburg", "DE"),
    ("Shafi", "Goldwasser", "Tel Aviv", "IL"),
    ("Jim", "Gray", "San Francisco", "US"),
    ("Michael", "Stonebraker", "Bursa", "TR"),
    ("Edgar", "Codd", "Manchester", "GB"),
    ("Grace", "Murray", "Cologne", "DE"),
    ("Bjarne", "Stroustrup", "Aarhus", "DK"),
    ("Guido", "van Rossum", "Rotterdam", "NL"),
    ("Sophie", "Wilson", "Leeds", "GB"),
    ("Hedy", "Lamarr", "Vienna", "AT"),
    ("Whitfield", "Diffie", "Antalya", "TR"),
    ("Martin", "Hellman", "Frankfurt", "DE"),
    ("Tim", "Berners-Lee", "Geneva", "CH"),
    ("Vint", "Cerf", "Washington", "US"),
    ("Joan", "Clarke", "Bristol", "GB"),
    ("Peter", "Naur", "Copenhagen", "DK"),
    ("Ole-Johan", "Dahl", "Oslo", "NO"),
    ("Kristen", "Nygaard", "Bergen", "NO"),
    ("Robin", "Milner", "Edinburgh", "GB"),
    ("Mary", "Shaw", "Pittsburgh", "US"),
    ("Jean", "Sammet", "Eskisehir", "TR"),
    ("John", "McCarthy", "Stuttgart", "DE"),
    ("Margaret", "Hamilton", "Paris", "FR"),
    ("Grace", "Hopper", "Lyon", "FR"),
    ("Linus", "Torvalds", "Helsinki", "FI"),
]
assert len(PEOPLE) == 40
customers = []
for n, (first, last, city, country) in enumerate(PEOPLE, start=1):
    created = datetime(2023, 1, 1) + timedelta(days=rnd.randint(0, 700), seconds=rnd.randint(0, 86399))
    customers.append({"_id": i32(n), "firstName": first, "lastName": last,
                      "email": f"{first.lower()}.{last.lower().replace(' ', '')}@example.com",
                      "city": city, "country": country, "createdAt": date(created)})


def name_of(cid):
    f, l, _, _ = PEOPLE[cid - 1]
    return f"{f} {l}"


# ---------------------------------------------------------------- reviews
BODIES = ["Loved it.", "Could not put it down.", "Too long.", "A classic.", "Overrated.",
          "Beautifully written.", "Hard going in the middle.", "Worth every page.",
          "My book club liked it more than I did.", "Read it twice.", "Fine, not great.",
          "The ending stayed with me.", "A bit dated now.", "Gift for my father; he loved it.",
          "Dense but rewarding.", "Translation could be better."]
reviews = []
seq = 0


def review_id():
    global seq
    seq += 1
    return oid("6a10c0de00000000%08x" % seq)


# Dune: four regular reviews (5+4+4+4) and the legacy one
for cid, rating, at, body in [
    (11, 4, datetime(2024, 2, 9, 20, 15, 0), "Politics, ecology and religion in one desert."),
    (24, 4, datetime(2025, 3, 17, 8, 2, 41), "Hard going in the middle."),
    (5, 4, datetime(2025, 11, 23, 16, 40, 5), "The appendices are a book of their own."),
    (7, 5, datetime(2026, 5, 4, 1, 49, 15), "Still the best world-building I know."),
]:
    reviews.append({"_id": review_id(), "bookId": i32(26), "customer": {"customerId": i32(cid), "name": name_of(cid)},
                    "rating": i32(rating), "body": body, "reviewedAt": date(at)})
legacy = {"_id": oid("6af85e4c5a7edf5858284d0c"), "bookId": i32(26),
          "customer": {"customerId": i32(39), "name": name_of(39)},
          "rating": "5", "body": "A classic.", "reviewedAt": date(datetime(2019, 8, 21, 14, 5, 0))}

# the other books: 1..58 except 26, each at least one review
other = []
book_ids = [b for b in range(1, 59) if b != 26]
for b in book_ids:
    other.append(b)
while len(other) < 290:
    other.append(rnd.choice(book_ids))
rnd.shuffle(other)
for b in other:
    cid = rnd.randint(1, 40)
    at = datetime(2024, 1, 1) + timedelta(seconds=rnd.randint(0, 2 * 365 * 86400 + 150 * 86400))
    r = {"_id": review_id(), "bookId": i32(b), "customer": {"customerId": i32(cid), "name": name_of(cid)},
         "rating": i32(rnd.choices([1, 2, 3, 4, 5], [1, 2, 4, 6, 5])[0])}
    if rnd.random() < 0.85:
        r["body"] = rnd.choice(BODIES)
    r["reviewedAt"] = date(at)
    if rnd.random() < 0.4:
        voters = sorted(rnd.sample(range(1, 41), rnd.randint(0, 6)))
        r["helpfulCount"] = i32(len(voters))
        r["helpfulVoters"] = [i32(v) for v in voters]
    reviews.append(r)
# the legacy review sits among the old ones, written by another application
reviews.insert(120, legacy)

# ---------------------------------------------------------------- orders
CUTOFF = datetime(2025, 7, 1)
orders = []
ARCHIVABLE = 109
TOTAL = 379
plan = []
for _ in range(ARCHIVABLE):  # closed before the cutoff: archived
    plan.append((rnd.choice(["Delivered"] * 5 + ["Cancelled"]), True))
for _ in range(20):  # still open before the cutoff (stay in orders)
    plan.append((rnd.choice(["Shipped", "Pending", "Returned"]), True))
while len(plan) < TOTAL:  # on or after the cutoff
    plan.append((rnd.choice(["Delivered", "Delivered", "Cancelled", "Shipped", "Pending", "Processing"]), False))
rnd.shuffle(plan)
start_before = datetime(2024, 7, 1)
for n, (status, before) in enumerate(plan, start=1):
    if before:
        at = start_before + timedelta(seconds=rnd.randint(0, int((CUTOFF - start_before).total_seconds()) - 1))
    else:
        at = CUTOFF + timedelta(seconds=rnd.randint(0, 360 * 86400))
    items = []
    for bid in rnd.sample(range(1, 61), rnd.randint(1, 3)):
        items.append({"bookId": i32(bid), "qty": i32(rnd.randint(1, 3)), "price": books[bid - 1]["price"]})
    total = sum(float(it["price"]["$numberDouble"]) * int(it["qty"]["$numberInt"]) for it in items)
    orders.append({"_id": i32(n), "customerId": i32(rnd.randint(1, 40)), "items": items,
                   "total": dbl(round(total, 2)), "status": status, "orderedAt": date(at)})
assert sum(1 for o in orders if o["status"] in ("Delivered", "Cancelled")
           and int(o["orderedAt"]["$date"]["$numberLong"]) < CUTOFF.replace(tzinfo=timezone.utc).timestamp() * 1000) == ARCHIVABLE

os.makedirs(OUT, exist_ok=True)
write("books", books)
write("customers", customers)
write("reviews", reviews)
write("orders", orders)
print(f"books {len(books)} customers {len(customers)} reviews {len(reviews)} orders {len(orders)}")
