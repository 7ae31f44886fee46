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
	/* the usual case, nothing set: no call into the allocator */
	if (err == NULL || (err->msg == NULL && err->info == NULL && err->extra == NULL)) {
		if (err != NULL)
			err->code = 0;
		return;
	}
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

/* MongoDB's names (error_codes.yml), sorted by code for the binary search. */
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
	{23, "AlreadyInitialized"},
	{24, "LockTimeout"},
	{25, "RemoteValidationError"},
	{26, "NamespaceNotFound"},
	{27, "IndexNotFound"},
	{28, "PathNotViable"},
	{29, "NonExistentPath"},
	{30, "InvalidPath"},
	{31, "RoleNotFound"},
	{32, "RolesNotRelated"},
	{33, "PrivilegeNotFound"},
	{34, "CannotBackfillArray"},
	{35, "UserModificationFailed"},
	{36, "RemoteChangeDetected"},
	{37, "FileRenameFailed"},
	{38, "FileNotOpen"},
	{39, "FileStreamFailed"},
	{40, "ConflictingUpdateOperators"},
	{41, "FileAlreadyOpen"},
	{42, "LogWriteFailed"},
	{43, "CursorNotFound"},
	{45, "UserDataInconsistent"},
	{46, "LockBusy"},
	{47, "NoMatchingDocument"},
	{48, "NamespaceExists"},
	{49, "InvalidRoleModification"},
	{50, "MaxTimeMSExpired"},
	{51, "ManualInterventionRequired"},
	{52, "DollarPrefixedFieldName"},
	{53, "InvalidIdField"},
	{54, "NotSingleValueField"},
	{55, "InvalidDBRef"},
	{56, "EmptyFieldName"},
	{57, "DottedFieldName"},
	{58, "RoleModificationFailed"},
	{59, "CommandNotFound"},
	{61, "ShardKeyNotFound"},
	{62, "OplogOperationUnsupported"},
	{64, "WriteConcernTimeout"},
	{65, "MultipleErrorsOccurred"},
	{66, "ImmutableField"},
	{67, "CannotCreateIndex"},
	{68, "IndexAlreadyExists"},
	{69, "AuthSchemaIncompatible"},
	{70, "ShardNotFound"},
	{71, "ReplicaSetNotFound"},
	{72, "InvalidOptions"},
	{73, "InvalidNamespace"},
	{74, "NodeNotFound"},
	{75, "WriteConcernLegacyOK"},
	{76, "NoReplicationEnabled"},
	{77, "OperationIncomplete"},
	{78, "CommandResultSchemaViolation"},
	{79, "UnknownReplWriteConcern"},
	{80, "RoleDataInconsistent"},
	{81, "NoMatchParseContext"},
	{82, "NoProgressMade"},
	{83, "RemoteResultsUnavailable"},
	{85, "IndexOptionsConflict"},
	{86, "IndexKeySpecsConflict"},
	{87, "CannotSplit"},
	{89, "NetworkTimeout"},
	{90, "CallbackCanceled"},
	{91, "ShutdownInProgress"},
	{92, "SecondaryAheadOfPrimary"},
	{93, "InvalidReplicaSetConfig"},
	{94, "NotYetInitialized"},
	{95, "NotSecondary"},
	{96, "OperationFailed"},
	{97, "NoProjectionFound"},
	{98, "DBPathInUse"},
	{100, "UnsatisfiableWriteConcern"},
	{101, "OutdatedClient"},
	{102, "IncompatibleAuditMetadata"},
	{103, "NewReplicaSetConfigurationIncompatible"},
	{104, "NodeNotElectable"},
	{105, "IncompatibleShardingMetadata"},
	{106, "DistributedClockSkewed"},
	{107, "LockFailed"},
	{108, "InconsistentReplicaSetNames"},
	{109, "ConfigurationInProgress"},
	{110, "CannotInitializeNodeWithData"},
	{111, "NotExactValueField"},
	{112, "WriteConflict"},
	{113, "InitialSyncFailure"},
	{114, "InitialSyncOplogSourceMissing"},
	{115, "CommandNotSupported"},
	{116, "DocTooLargeForCapped"},
	{117, "ConflictingOperationInProgress"},
	{118, "NamespaceNotSharded"},
	{119, "InvalidSyncSource"},
	{120, "OplogStartMissing"},
	{121, "DocumentValidationFailure"},
	{123, "NotAReplicaSet"},
	{124, "IncompatibleElectionProtocol"},
	{125, "CommandFailed"},
	{126, "RPCProtocolNegotiationFailed"},
	{127, "UnrecoverableRollbackError"},
	{128, "LockNotFound"},
	{129, "LockStateChangeFailed"},
	{130, "SymbolNotFound"},
	{133, "FailedToSatisfyReadPreference"},
	{134, "ReadConcernMajorityNotAvailableYet"},
	{135, "StaleTerm"},
	{136, "CappedPositionLost"},
	{137, "IncompatibleShardingConfigVersion"},
	{138, "RemoteOplogStale"},
	{139, "JSInterpreterFailure"},
	{140, "InvalidSSLConfiguration"},
	{141, "SSLHandshakeFailed"},
	{142, "JSUncatchableError"},
	{143, "CursorInUse"},
	{144, "IncompatibleCatalogManager"},
	{145, "PooledConnectionsDropped"},
	{146, "ExceededMemoryLimit"},
	{147, "ZLibError"},
	{148, "ReadConcernMajorityNotEnabled"},
	{149, "NoConfigPrimary"},
	{150, "StaleEpoch"},
	{151, "OperationCannotBeBatched"},
	{152, "OplogOutOfOrder"},
	{153, "ChunkTooBig"},
	{154, "InconsistentShardIdentity"},
	{155, "CannotApplyOplogWhilePrimary"},
	{157, "CanRepairToDowngrade"},
	{158, "MustUpgrade"},
	{159, "DurationOverflow"},
	{160, "MaxStalenessOutOfRange"},
	{161, "IncompatibleCollationVersion"},
	{162, "CollectionIsEmpty"},
	{163, "ZoneStillInUse"},
	{164, "InitialSyncActive"},
	{165, "ViewDepthLimitExceeded"},
	{166, "CommandNotSupportedOnView"},
	{167, "OptionNotSupportedOnView"},
	{168, "InvalidPipelineOperator"},
	{169, "CommandOnShardedViewNotSupportedOnMongod"},
	{170, "TooManyMatchingDocuments"},
	{171, "CannotIndexParallelArrays"},
	{172, "TransportSessionClosed"},
	{173, "TransportSessionNotFound"},
	{174, "TransportSessionUnknown"},
	{175, "QueryPlanKilled"},
	{176, "FileOpenFailed"},
	{177, "ZoneNotFound"},
	{178, "RangeOverlapConflict"},
	{179, "WindowsPdhError"},
	{180, "BadPerfCounterPath"},
	{181, "AmbiguousIndexKeyPattern"},
	{182, "InvalidViewDefinition"},
	{183, "ClientMetadataMissingField"},
	{184, "ClientMetadataAppNameTooLarge"},
	{185, "ClientMetadataDocumentTooLarge"},
	{186, "ClientMetadataCannotBeMutated"},
	{187, "LinearizableReadConcernError"},
	{188, "IncompatibleServerVersion"},
	{189, "PrimarySteppedDown"},
	{190, "MasterSlaveConnectionFailure"},
	{192, "FailPointEnabled"},
	{194, "BalancerInterrupted"},
	{195, "ViewPipelineMaxSizeExceeded"},
	{197, "InvalidIndexSpecificationOption"},
	{199, "ReplicaSetMonitorRemoved"},
	{200, "ChunkRangeCleanupPending"},
	{201, "CannotBuildIndexKeys"},
	{202, "NetworkInterfaceExceededTimeLimit"},
	{203, "ShardingStateNotInitialized"},
	{204, "TimeProofMismatch"},
	{205, "ClusterTimeFailsRateLimiter"},
	{206, "NoSuchSession"},
	{207, "InvalidUUID"},
	{208, "TooManyLocks"},
	{209, "StaleClusterTime"},
	{210, "CannotVerifyAndSignLogicalTime"},
	{211, "KeyNotFound"},
	{212, "IncompatibleRollbackAlgorithm"},
	{213, "DuplicateSession"},
	{214, "AuthenticationRestrictionUnmet"},
	{215, "DatabaseDropPending"},
	{216, "ElectionInProgress"},
	{217, "IncompleteTransactionHistory"},
	{218, "UpdateOperationFailed"},
	{219, "FTDCPathNotSet"},
	{220, "FTDCPathAlreadySet"},
	{221, "IndexModified"},
	{222, "CloseChangeStream"},
	{223, "IllegalOpMsgFlag"},
	{224, "QueryFeatureNotAllowed"},
	{225, "TransactionTooOld"},
	{226, "AtomicityFailure"},
	{227, "CannotImplicitlyCreateCollection"},
	{228, "SessionTransferIncomplete"},
	{229, "MustDowngrade"},
	{230, "DNSHostNotFound"},
	{231, "DNSProtocolError"},
	{232, "MaxSubPipelineDepthExceeded"},
	{233, "TooManyDocumentSequences"},
	{234, "RetryChangeStream"},
	{235, "InternalErrorNotSupported"},
	{237, "CursorKilled"},
	{238, "NotImplemented"},
	{239, "SnapshotTooOld"},
	{240, "DNSRecordTypeMismatch"},
	{241, "ConversionFailure"},
	{242, "CannotCreateCollection"},
	{243, "IncompatibleWithUpgradedServer"},
	{245, "BrokenPromise"},
	{246, "SnapshotUnavailable"},
	{247, "ProducerConsumerQueueBatchTooLarge"},
	{248, "ProducerConsumerQueueEndClosed"},
	{249, "StaleDbVersion"},
	{250, "StaleChunkHistory"},
	{251, "NoSuchTransaction"},
	{252, "ReentrancyNotAllowed"},
	{256, "TransactionCommitted"},
	{257, "TransactionTooLarge"},
	{258, "UnknownFeatureCompatibilityVersion"},
	{259, "KeyedExecutorRetry"},
	{260, "InvalidResumeToken"},
	{261, "TooManyLogicalSessions"},
	{262, "ExceededTimeLimit"},
	{263, "OperationNotSupportedInTransaction"},
	{264, "TooManyFilesOpen"},
	{265, "OrphanedRangeCleanUpFailed"},
	{266, "FailPointSetFailed"},
	{267, "PreparedTransactionInProgress"},
	{268, "CannotBackup"},
	{269, "DataModifiedByRepair"},
	{270, "RepairedReplicaSetNode"},
	{271, "JSInterpreterFailureWithStack"},
	{272, "MigrationConflict"},
	{276, "IndexBuildAborted"},
	{277, "AlarmAlreadyFulfilled"},
	{278, "UnsatisfiableCommitQuorum"},
	{279, "ClientDisconnect"},
	{280, "ChangeStreamFatalError"},
	{283, "WouldChangeOwningShard"},
	{285, "IndexBuildAlreadyInProgress"},
	{286, "ChangeStreamHistoryLost"},
	{288, "ChecksumMismatch"},
	{290, "TransactionExceededLifetimeLimitSeconds"},
	{291, "NoQueryExecutionPlans"},
	{292, "QueryExceededMemoryLimitNoDiskUseAllowed"},
	{293, "InvalidSeedList"},
	{294, "InvalidTopologyType"},
	{295, "InvalidHeartBeatFrequency"},
	{296, "TopologySetNameRequired"},
	{297, "HierarchicalAcquisitionLevelViolation"},
	{298, "InvalidServerType"},
	{299, "OCSPCertificateStatusRevoked"},
	{301, "DataCorruptionDetected"},
	{302, "OCSPCertificateStatusUnknown"},
	{303, "SplitHorizonChange"},
	{307, "RangeDeletionAbandonedBecauseTaskDocumentDoesNotExist"},
	{308, "CurrentConfigNotCommittedYet"},
	{309, "ExhaustCommandFinished"},
	{310, "PeriodicJobIsStopped"},
	{313, "ResumableRangeDeleterDisabled"},
	{314, "ObjectIsBusy"},
	{319, "MovePrimaryInProgress"},
	{322, "APIVersionError"},
	{323, "APIStrictError"},
	{324, "APIDeprecationError"},
	{326, "OplogQueryMinTsMissing"},
	{332, "CannotDowngrade"},
	{334, "MechanismUnavailable"},
	{338, "ReshardCollectionInProgress"},
	{344, "AuditingNotEnabled"},
	{349, "KeyPatternShorterThanBound"},
	{352, "UnsupportedOpQueryCommand"},
	{357, "InvalidBSONType"},
	{359, "CannotConvertIndexToUnique"},
	{361, "CollectionUUIDMismatch"},
	{365, "TemporarilyUnavailable"},
	{371, "UserWritesBlocked"},
	{376, "ChangeStreamNotEnabled"},
	{378, "NonConformantBSON"},
	{386, "DuplicateKeyId"},
	{388, "TransactionTooLargeForCache"},
	{391, "ReauthenticationRequired"},
	{402, "ResourceExhausted"},
	{408, "CannotInsertTimeseriesBucketsWithMixedSchema"},
	{411, "QueryRejectedBySettings"},
	{426, "IndexIsEmpty"},
	{449, "RateLimitExceeded"},
	{9001, "SocketException"},
	{10107, "NotWritablePrimary"},
	{10334, "BSONObjectTooLarge"},
	{11000, "DuplicateKey"},
	{11600, "InterruptedAtShutdown"},
	{11601, "Interrupted"},
	{11602, "InterruptedDueToReplStateChange"},
	{13297, "DatabaseDifferCase"},
	{13388, "StaleConfig"},
	{13435, "NotPrimaryNoSecondaryOk"},
	{13436, "NotPrimaryOrSecondary"},
	{14031, "OutOfDiskSpace"},
	{46841, "ClientMarkedKilled"},
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
