/*
 * error.c -- terr_t: setting, wrapping, clearing, and MongoDB's code names.
 */
#include "common/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
terr_setv(terr_t *err, int code, const char *fmt, va_list ap)
{
	if (err == NULL)
		return -1;
	terr_clear(err);
	err->code = code;
	err->msg = bson_strdupv_printf(fmt, ap);
	return -1;
}

int
terr_set(terr_t *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	terr_setv(err, code, fmt, ap);
	va_end(ap);
	return -1;
}

void
terr_set_info_steal(terr_t *err, bson_t *info)
{
	if (err == NULL) {
		bson_destroy(info);
		return;
	}
	if (err->info != NULL)
		bson_destroy(err->info);
	err->info = info;
}

void
terr_set_extra_steal(terr_t *err, bson_t *extra)
{
	if (err == NULL) {
		bson_destroy(extra);
		return;
	}
	if (err->extra != NULL)
		bson_destroy(err->extra);
	err->extra = extra;
}

void
terr_wrap(terr_t *err, const char *prefix)
{
	char *m;

	if (err == NULL || err->msg == NULL)
		return;
	m = bson_strdup_printf("%s :: caused by :: %s", prefix, err->msg);
	bson_free(err->msg);
	err->msg = m;
}

void
terr_clear(terr_t *err)
{
	if (err == NULL)
		return;
	bson_free(err->msg);
	if (err->info != NULL)
		bson_destroy(err->info);
	if (err->extra != NULL)
		bson_destroy(err->extra);
	err->code = 0;
	err->msg = NULL;
	err->info = NULL;
	err->extra = NULL;
}

void
terr_move(terr_t *dst, terr_t *src)
{
	terr_clear(dst);
	*dst = *src;
	src->code = 0;
	src->msg = NULL;
	src->info = NULL;
	src->extra = NULL;
}

bool
terr_is_set(const terr_t *err)
{
	return err != NULL && err->code != 0;
}

/* Sorted by code for bsearch. */
static const struct code_name {
	int code;
	const char *name;
} code_names[] = {
	{1, "InternalError"},
	{2, "BadValue"},
	{4, "NoSuchKey"},
	{5, "GraphContainsCycle"},
	{6, "HostUnreachable"},
	{7, "HostNotFound"},
	{8, "UnknownError"},
	{9, "FailedToParse"},
	{10, "CannotMutateObject"},
	{11, "UserNotFound"},
	{12, "UnsupportedFormat"},
	{13, "Unauthorized"},
	{14, "TypeMismatch"},
	{15, "Overflow"},
	{16, "InvalidLength"},
	{17, "ProtocolError"},
	{18, "AuthenticationFailed"},
	{19, "CannotReuseObject"},
	{20, "IllegalOperation"},
	{21, "EmptyArrayOperation"},
	{22, "InvalidBSON"},
	{24, "LockTimeout"},
	{26, "NamespaceNotFound"},
	{27, "IndexNotFound"},
	{28, "PathNotViable"},
	{29, "NonExistentPath"},
	{30, "InvalidPath"},
	{31, "RoleNotFound"},
	{32, "RolesNotRelated"},
	{33, "PrivilegeNotFound"},
	{34, "CannotBackfillArray"},
	{37, "NamespaceNotSharded"},
	{40, "ConflictingUpdateOperators"},
	{43, "CursorNotFound"},
	{46, "LockBusy"},
	{48, "NamespaceExists"},
	{50, "MaxTimeMSExpired"},
	{51, "UserDataInconsistent"},
	{52, "DollarPrefixedFieldName"},
	{53, "InvalidIdField"},
	{54, "NotSingleValueField"},
	{55, "InvalidDBRef"},
	{56, "EmptyFieldName"},
	{57, "DottedFieldName"},
	{59, "CommandNotFound"},
	{61, "ShardKeyNotFound"},
	{62, "OplogOperationUnsupported"},
	{66, "ImmutableField"},
	{67, "CannotCreateIndex"},
	{68, "IndexAlreadyExists"},
	{72, "InvalidOptions"},
	{73, "InvalidNamespace"},
	{74, "NodeNotFound"},
	{79, "UnknownReplWriteConcern"},
	{85, "IndexOptionsConflict"},
	{86, "IndexKeySpecsConflict"},
	{89, "NetworkTimeout"},
	{90, "CallbackCanceled"},
	{91, "ShutdownInProgress"},
	{96, "OperationFailed"},
	{98, "DBPathInUse"},
	{100, "UnsatisfiableWriteConcern"},
	{102, "CannotBackfillArray"},
	{112, "WriteConflict"},
	{115, "CommandNotSupported"},
	{121, "DocumentValidationFailure"},
	{123, "NotAReplicaSet"},
	{125, "CommandFailed"},
	{139, "QueryPlanKilled"},
	{146, "ExceededMemoryLimit"},
	{160, "NoSuchSession"},
	{166, "CommandNotSupportedOnView"},
	{167, "OptionNotSupportedOnView"},
	{168, "InvalidPipelineOperator"},
	{171, "InvalidIndexSpecificationOption"},
	{175, "QueryFeatureNotAllowed"},
	{197, "InvalidIndexSpecificationOption"},
	{201, "IndexNotFound"},
	{206, "NoSuchTransaction"},
	{207, "InvalidUUID"},
	{211, "KeyNotFound"},
	{228, "ConversionFailure"},
	{238, "NotImplemented"},
	{241, "ConversionFailure"},
	{251, "NoSuchTransaction"},
	{263, "OperationNotSupportedInTransaction"},
	{276, "IndexBuildAborted"},
	{285, "IndexBuildAlreadyInProgressForCollection"},
	{292, "QueryExceededMemoryLimitNoDiskUseAllowed"},
	{303, "DuplicateKeyValue"},
	{314, "ObjectIsBusy"},
	{11000, "DuplicateKey"},
	{11600, "InterruptedAtShutdown"},
	{11601, "Interrupted"},
	{13297, "DatabaseDifferCase"},
	{13388, "StaleConfig"},
	{50768, "NotARetryableWriteCommand"},
};

const char *
terr_code_name(int code, char buf[32])
{
	size_t lo = 0, hi = sizeof(code_names) / sizeof(code_names[0]);

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (code_names[mid].code == code)
			return code_names[mid].name;
		if (code_names[mid].code < code)
			lo = mid + 1;
		else
			hi = mid;
	}
	snprintf(buf, 32, "Location%d", code);
	return buf;
}
