/* version.h -- the versions Tamga reports (buildInfo, hello, --version). */
#ifndef TAMGA_COMMON_VERSION_H
#define TAMGA_COMMON_VERSION_H

#define TAMGA_VERSION "0.1.0"
#define TAMGA_MONGODB_VERSION "9.0.8"
#define TAMGA_MONGODB_VERSION_ARRAY {9, 0, 8, 0}
/* mongod's WIRE_VERSION_90 (8.0 is 25). */
#define TAMGA_MAX_WIRE_VERSION 29
#define TAMGA_MIN_WIRE_VERSION 0

#define TAMGA_MAX_BSON_SIZE (16 * 1024 * 1024)
/* mongod's BSONObjMaxInternalSize: what a document built inside the server
 * (a reply, an aggregation's result) may reach */
#define TAMGA_MAX_BSON_INTERNAL_SIZE (TAMGA_MAX_BSON_SIZE + 16 * 1024)
#define TAMGA_MAX_MESSAGE_SIZE 48000000
#define TAMGA_MAX_WRITE_BATCH 100000
#define TAMGA_MAX_NESTING 100   /* stored documents; MongoDB's depth limit */

#endif
