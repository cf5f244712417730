#pragma once
// Encoding of requests to and decoding of responses from etcd 3.4's JSON gateway (/v3/...).
// Pure functions, no I/O, so the gateway's quirks are unit-tested without a server:
//  - keys and values are base64 (encoded here, decoded strictly);
//  - int64 fields arrive as JSON strings (numbers are accepted too);
//  - zero and false fields are omitted (absent means 0 / false / empty);
//  - a keepalive on a dead lease answers 200 without a TTL: decoded as NotFound "lease lost";
//  - errors are {"error","message","code"} with a gRPC code, mapped to a StatusCode.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.hpp"
#include "fleet/etcd_types.hpp"

namespace fw::fleet {

using Json = nlohmann::json;

// The smallest key greater than every key starting with prefix (etcd's range_end for a
// prefix range). An empty prefix or one of only 0xFF bytes gives "\0" (to the end).
std::string prefix_end(std::string_view prefix);

// An int64 field of obj that may be a JSON string or number; absent or null is 0.
Result<int64_t> json_int64(const Json& obj, const char* field);
// A boolean field; absent is false.
Result<bool> json_bool(const Json& obj, const char* field);
// A base64 field, decoded; absent is "".
Result<std::string> json_bytes(const Json& obj, const char* field);

Json encode_range(const RangeRequest& r);
Json encode_put(std::string_view key, std::string_view value, int64_t lease, bool prev_kv);
Json encode_delete(std::string_view key, std::string_view range_end, bool prev_kv);
Json encode_compare(const Compare& c);
Json encode_txn_op(const TxnOp& op);
Json encode_txn(const std::vector<Compare>& compare, const std::vector<TxnOp>& success,
                const std::vector<TxnOp>& failure);
Json encode_leader(const LeaderKey& leader);
// create_request of /v3/watch; start_revision 0 means "from now".
Json encode_watch_create(std::string_view key, std::string_view range_end, int64_t start_revision,
                         bool prev_kv);

Result<KeyValue> decode_kv(const Json& j);
// Header revision of a response ({"header":{"revision":...}}).
Result<int64_t> decode_header_revision(const Json& j);
Result<RangeResponse> decode_range(const Json& j);
Result<PutResponse> decode_put(const Json& j);
Result<DeleteResponse> decode_delete(const Json& j);
Result<TxnResponse> decode_txn(const Json& j);
Result<LeaseGrant> decode_lease_grant(const Json& j);
// Keepalive answer ({"result":{...}}). NotFound("lease <id> lost") if TTL is absent or 0.
Result<LeaseGrant> decode_keepalive(const Json& j);
Result<LeaderKey> decode_leader_key(const Json& j);  // {"leader":{name,key,rev,lease}}
// One line of a watch stream: {"result":{...}} or {"error":{...}}.
Result<WatchResponse> decode_watch_line(std::string_view line);

// Status for a non-2xx answer or an error body; http_status 0 means "not HTTP".
Status status_from_error(int http_status, std::string_view body);

// Splits a byte stream into lines (for chunked streams whose chunks need not align with
// lines). feed() appends bytes; next() pops one complete line without its '\n'.
class LineSplitter {
 public:
  void feed(std::string_view bytes) { buf_.append(bytes); }
  bool next(std::string* line);
  size_t pending() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  size_t pos_ = 0;
};

}  // namespace fw::fleet
