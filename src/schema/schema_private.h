/*
 * schema_private.h -- the compiled form of a $jsonSchema, shared by the
 * compiler (schema_compile.c), the matcher (schema_match.c) and the error
 * explainer (schema_explain.c).  Nothing outside src/schema/ includes this.
 *
 * One snode_t per (sub)schema.  Keywords are decoded once into typed fields
 * so that matching reads no BSON from the schema; the subschema's own BSON is
 * kept (raw) only for the slow path that writes errInfo ("specifiedAs").
 */
#ifndef TAMGA_SCHEMA_PRIVATE_H
#define TAMGA_SCHEMA_PRIVATE_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>
#include <string.h>
#include "schema/schema.h"

typedef struct snode snode_t;

/* Type bits: bit (bson type code) for 0x01..0x13, MinKey and MaxKey below. */
#define SCH_BIT_MINKEY 30
#define SCH_BIT_MAXKEY 31
#define SCH_NUMBER_MASK ((1u << BSON_TYPE_INT32) | (1u << BSON_TYPE_INT64) | \
			 (1u << BSON_TYPE_DOUBLE) | (1u << BSON_TYPE_DECIMAL128))

enum { SCH_ITEMS_NONE, SCH_ITEMS_SCHEMA, SCH_ITEMS_ARRAY };
enum { SCH_ADDL_NONE, SCH_ADDL_TRUE, SCH_ADDL_FALSE, SCH_ADDL_SCHEMA };

/* A number decomposed as sign * mant * 10^exp for exact multipleOf. */
typedef struct {
	int kind;               /* 0 finite, 1 infinity, 2 NaN */
	bool neg;
	unsigned __int128 mant;
	int32_t exp;
} sch_dec_t;

typedef struct {
	char *name;
	uint32_t len;
	snode_t *schema;
	int req_bit;            /* bit in the "required seen" mask, or -1 */
	uint64_t req_m;         /* 1 << req_bit, or 0 (sch_node_finish) */
	bool dotted;            /* "a.b": a path into embedded documents, as in mongod */
	uint64_t word;          /* the name's first 8 bytes, zero-padded (fast compare) */
} sch_prop_t;

/* Slots of a node's property hash (at most half full: nodes with more than
 * half as many plain property names keep the linear search). */
#define SCH_PROP_SLOTS 64

typedef struct {
	char *src;
	pcre2_code *re;
	snode_t *schema;
} sch_pat_t;

typedef struct {
	char *name;
	snode_t *schema;        /* schema dependency, or NULL */
	char **props;           /* property dependency, in the given order */
	uint32_t nprops;
} sch_dep_t;

struct snode {
	bson_t *raw;            /* owned copy of this subschema */
	bool top;               /* compiled at mongod's empty path */
	bool always_false;      /* top-level type that excludes "object" */
	char *title, *description;

	/* type / bsonType */
	bool has_type;
	bool type_is_json;      /* keyword was "type" (else "bsonType") */
	uint32_t type_mask;
	/* A single stated type turns restriction keywords of other types off. */
	bool off_string, off_number, off_array, off_object;

	/* strings */
	pcre2_code *pattern;
	int64_t min_len, max_len;       /* -1 = absent */

	/* numbers */
	bool has_multiple_of;
	sch_dec_t multiple_of;
	bool has_min, has_max, excl_min, excl_max;
	bson_value_t minimum, maximum;  /* numeric scalars, no heap */

	/* arrays */
	int64_t min_items, max_items;
	bool unique_items;
	int items_kind;
	snode_t *items;
	snode_t **items_arr;
	uint32_t nitems;
	int addl_items_kind;
	snode_t *addl_items;

	/* objects */
	sch_prop_t *props;
	uint32_t nprops;
	char **required;                /* sorted bytewise */
	uint32_t nrequired;
	/* Fast required check: required names that are also properties get a
	 * bit (when there are at most 64 of them); the others are looked up. */
	uint64_t req_mask;              /* all bits that must be seen */
	char **req_extra;               /* required names without a bit (borrowed from required) */
	uint32_t nreq_extra;
	bool has_allowed;               /* patternProperties or additionalProperties */
	sch_pat_t *pats;
	uint32_t npats;
	int addl_props_kind;
	snode_t *addl_props;
	int64_t min_props, max_props;
	sch_dep_t *deps;
	uint32_t ndeps;
	bool has_deps;

	/* logic */
	snode_t **all_of, **any_of, **one_of;
	uint32_t nall_of, nany_of, none_of;
	snode_t *not_;
	bson_t *enum_arr;               /* owned {"0": v0, ...} or NULL */
	uint32_t nenum;
	bool enum_always_false;         /* top-level enum without objects */

	/* encryption */
	bool encrypt;
	uint32_t encrypt_type_mask;     /* 0 = any */

	/* What the raw-element fast path (schema_match.c's el_match) needs to
	 * look at, decided once by sch_node_finish: false means "nothing of
	 * this kind can fail here", so the value is not even decoded. */
	bool slow;              /* logic, enum, encrypt, dependencies or always_false */
	bool leaf;              /* nothing but the type to check (no slow, no *_check) */
	uint32_t type_ok;       /* type_mask with a type, else every type's bit */
	bool str_check;         /* a string restriction is on */
	bool num_check;         /* a number restriction is on */
	bool arr_check;         /* an array restriction or items is on */
	bool obj_check;         /* an object restriction or properties is on */
	bool has_dotted;        /* a property name with a dot (a path) */
	bool prop_hashed;       /* prop_slot is in use */
	uint8_t prop_slot[SCH_PROP_SLOTS];   /* 1 + index of a plain property, by name hash; 0 empty */
	/* Integer bounds for int/long values, inclusive, when minimum/maximum
	 * are ints or longs and there is no multipleOf (else match_number). */
	bool int_bounds;
	int64_t imin, imax;
};

struct schema {
	snode_t *root;
	bool uses_encrypt;
};

/* schema_match.c */
bool sch_node_match(const snode_t *n, const bson_value_t *v);
bool sch_val_equal(const bson_value_t *a, const bson_value_t *b);
uint64_t sch_val_hash(const bson_value_t *v);
bool sch_regex_search(const pcre2_code *re, const char *s, uint32_t len);
bool sch_dec_from_value(const bson_value_t *v, sch_dec_t *out);
/* Index of the first later element equal to an earlier one, or -1. */
int64_t sch_find_duplicate(const bson_value_t *arr, bson_value_t *dup);
bool sch_field_is_additional(const snode_t *n, const char *name, uint32_t len);
bool sch_enum_contains(const snode_t *n, const bson_value_t *v);
/* The value at a property name inside the object obj: a plain field, or for
 * a dotted name a path through embedded documents (an array on the way ends
 * the path).  out borrows from obj. */
bool sch_path_get(const bson_value_t *obj, const char *name, bson_value_t *out);

/* The type's bit in a bsonType/type mask (0 for a byte that is no type). */
static inline uint32_t
sch_type_bit(bson_type_t t)
{
	if (t == BSON_TYPE_MINKEY)
		return 1u << SCH_BIT_MINKEY;
	if (t == BSON_TYPE_MAXKEY)
		return 1u << SCH_BIT_MAXKEY;
	if ((int)t >= 1 && (int)t <= 0x13)
		return 1u << t;
	return 0;
}

/* True for the numeric BSON types (int, long, double, decimal). */
static inline bool
sch_is_num(bson_type_t t)
{
	return (sch_type_bit(t) & SCH_NUMBER_MASK) != 0;
}

/* The document doc as a value (borrows doc). */
static inline void
sch_doc_value(const bson_t *doc, bson_value_t *v)
{
	memset(v, 0, sizeof *v);
	v->value_type = BSON_TYPE_DOCUMENT;
	v->value.v_doc.data = (uint8_t *)bson_get_data(doc);
	v->value.v_doc.data_len = doc->len;
}

/* An iterator over the document or array value v (borrows v). */
static inline void
sch_iter_of(const bson_value_t *v, bson_iter_t *it)
{
	bson_iter_init_from_data(it, v->value.v_doc.data, v->value.v_doc.data_len);
}

/* schema_compile.c */
void sch_node_free(snode_t *n);

/* schema_match.c: set n's fast-path flags (slow, str_check, ...) from its
 * compiled keywords; the compiler calls it once per node, last. */
void sch_node_finish(snode_t *n);

#endif
