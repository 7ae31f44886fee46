/*
 * damage.h -- byte-level differences between two versions of a BSON document
 * ("damages", as mongod's updateWithDamages calls them), so a storage engine
 * can write only the changed bytes (WiredTiger's WT_CURSOR::modify) instead of
 * the whole new document.
 *
 * The difference is structural: both documents are walked element by element
 * in parallel, embedded documents and arrays whose key and type agree are
 * compared recursively, so appending to a column of a large document costs the
 * new elements plus the length prefixes of the documents around them, not the
 * document.  Where the element lists part (a key or a type differs, one list
 * ends first), the rest of the old list is replaced by the rest of the new one.
 * It never inspects more than the two documents' bytes and never fails on
 * valid BSON; it does not decide whether a damage-based write pays off (the
 * caller compares bdamages_bytes with the document's size).
 */
#ifndef TAMGA_BSON_DAMAGE_H
#define TAMGA_BSON_DAMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One change: old_len bytes at offset are replaced by the new_len bytes at
 * offset of the new document.  offset is in the new document's coordinates,
 * which is also where the change applies in a buffer that already holds every
 * earlier change of the list (entries are in ascending order, never
 * overlapping): applied in order, as WT_MODIFY entries are, they turn the old
 * document into the new one. */
typedef struct bdamage {
	uint32_t offset;
	uint32_t old_len;
	uint32_t new_len;
} bdamage_t;

/* A list of damages; zero-initialise, reuse with bdamages_compute (which
 * clears it), free with bdamages_destroy. */
typedef struct bdamages {
	bdamage_t *d;
	int n, cap;
	uint32_t last_old_end;   /* the old document's end of the last entry (merging) */
} bdamages_t;

/*
 * The damages that turn the BSON document old (old_len bytes) into new_doc
 * (new_len bytes), into out (cleared first).  Changes closer than a few bytes
 * are merged into one entry.  Returns false (out unspecified) when the walk
 * meets malformed BSON (runs of bytes found equal, or a document found to
 * be the other one plus appended elements, are compared with memcmp and not
 * walked: the damages are byte-exact either way); equal documents give no
 * entry.
 */
bool bdamages_compute(const uint8_t *old, uint32_t old_len, const uint8_t *new_doc, uint32_t new_len,
                      bdamages_t *out);

/*
 * Building a list by hand, for a writer that knows where it changed a
 * document (an append to a bucket): bdamages_reset empties dm; bdamages_add
 * records that old_len bytes at old_pos of the old document became new_len
 * bytes at new_pos of the new one (calls in ascending position order, never
 * overlapping; merged with the previous entry when close); bdamages_diff_at
 * appends the differences of the embedded documents (or arrays) starting at
 * old_pos in old and new_pos in new_doc (each inside a well-formed document
 * the caller holds), as bdamages_compute finds them (false when that walk
 * meets malformed BSON).
 */
void bdamages_reset(bdamages_t *dm);
void bdamages_add(bdamages_t *dm, uint32_t old_pos, uint32_t new_pos, uint32_t old_len, uint32_t new_len);
bool bdamages_diff_at(const uint8_t *old, uint32_t old_pos, const uint8_t *new_doc, uint32_t new_pos,
                      bdamages_t *dm);

/* The new bytes the damages carry (what a modify writes). */
size_t bdamages_bytes(const bdamages_t *dm);

/*
 * Apply dm to the old document into a new buffer of *out_len bytes (caller
 * frees with bson_free), taking each entry's new bytes from new_doc: the
 * reference the tests compare a full rewrite against.  Returns NULL when an
 * entry falls outside the buffer.
 */
uint8_t *bdamages_apply(const uint8_t *old, uint32_t old_len, const uint8_t *new_doc, uint32_t new_len,
                        const bdamages_t *dm, uint32_t *out_len);

void bdamages_destroy(bdamages_t *dm);

#endif
