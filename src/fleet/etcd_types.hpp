#pragma once
// Plain values exchanged with etcd's v3 API (keys and values as raw bytes in std::string;
// revisions, versions and lease ids as int64, 0 meaning "absent", as etcd itself does).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fw::fleet {

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;  // revision of the put that created the key
  int64_t mod_revision = 0;     // revision of its last change
  int64_t version = 0;          // number of puts since creation (0: key absent)
  int64_t lease = 0;            // lease id it is attached to (0: none)
};

// A range over [key, range_end). Use prefix_end(p) as range_end for "every key under p".
struct RangeRequest {
  std::string key;
  std::string range_end;  // empty: the single key
  int64_t revision = 0;   // 0: latest
  int64_t limit = 0;      // 0: no limit
  bool keys_only = false;
  bool count_only = false;
};

struct RangeResponse {
  int64_t revision = 0;  // store revision when the range was served
  std::vector<KeyValue> kvs;
  int64_t count = 0;  // number of keys in range (may exceed kvs.size() with a limit)
  bool more = false;
};

struct PutResponse {
  int64_t revision = 0;
  std::optional<KeyValue> prev_kv;  // only when asked for
};

struct DeleteResponse {
  int64_t revision = 0;
  int64_t deleted = 0;
  std::vector<KeyValue> prev_kvs;  // only when asked for
};

// One comparison of a transaction: <target of key> <result> <operand>.
struct Compare {
  enum class Target { kVersion, kCreate, kMod, kValue, kLease };
  enum class Op { kEqual, kGreater, kLess, kNotEqual };
  std::string key;
  Target target = Target::kVersion;
  Op op = Op::kEqual;
  int64_t number = 0;  // version / create / mod revision / lease id
  std::string value;   // for kValue

  static Compare Version(std::string key, Op op, int64_t version);
  static Compare CreateRevision(std::string key, Op op, int64_t rev);
  static Compare ModRevision(std::string key, Op op, int64_t rev);
  static Compare Value(std::string key, Op op, std::string value);
  static Compare Lease(std::string key, Op op, int64_t lease);
  // The key does not exist (create revision 0).
  static Compare Absent(std::string key) { return CreateRevision(std::move(key), Op::kEqual, 0); }
};

// One operation inside a transaction.
struct TxnOp {
  enum class Kind { kPut, kRange, kDelete };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;      // kPut
  int64_t lease = 0;      // kPut
  std::string range_end;  // kRange, kDelete

  static TxnOp Put(std::string key, std::string value, int64_t lease = 0);
  static TxnOp Get(std::string key, std::string range_end = {});
  static TxnOp Delete(std::string key, std::string range_end = {});
};

struct TxnOpResponse {
  TxnOp::Kind kind = TxnOp::Kind::kPut;
  RangeResponse range;  // kRange
  int64_t deleted = 0;  // kDelete
};

struct TxnResponse {
  int64_t revision = 0;
  bool succeeded = false;
  std::vector<TxnOpResponse> responses;  // of the branch that ran
};

struct LeaseGrant {
  int64_t id = 0;
  int64_t ttl_s = 0;  // granted TTL; etcd raises requests below ~2 s
};

// An election leadership, as returned by campaign; pass it back to proclaim/resign.
struct LeaderKey {
  std::string name;
  std::string key;  // <name>/<lease id in hex>
  int64_t rev = 0;  // create revision of key: the fencing token
  int64_t lease = 0;
};

struct WatchEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  KeyValue kv;                      // for kDelete: key and mod_revision only
  std::optional<KeyValue> prev_kv;  // when asked for
};

// One message of a watch stream.
struct WatchResponse {
  int64_t revision = 0;  // header revision
  bool created = false;
  bool canceled = false;
  int64_t compact_revision = 0;  // set when the start revision was compacted away
  std::string cancel_reason;
  std::vector<WatchEvent> events;
};

}  // namespace fw::fleet
