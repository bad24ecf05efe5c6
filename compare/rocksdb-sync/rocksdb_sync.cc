// RocksDB with WriteOptions.sync = true: N threads each doing Put of a B-byte value in a
// loop for S seconds. RocksDB groups concurrent writers itself (one WAL fdatasync per
// write group), so this is its group commit, measured the way `walab bench` measures
// walab's: acknowledged writes/s (a Put that returned OK) and per-Put latency p50/p99.
//
// Not part of the cargo build or the test command; built and run by ./run beside it:
//   g++ -O2 -std=c++17 rocksdb_sync.cc -o rocksdb_sync -lrocksdb -lpthread
//   ./rocksdb_sync --dir DIR --threads 64 --value-bytes 100 --seconds 10 [--json]
#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using Clock = std::chrono::steady_clock;

static void usage() {
  std::fprintf(stderr,
               "usage: rocksdb_sync --dir DIR [--threads N] [--value-bytes B] [--seconds S] [--json]\n");
  std::exit(2);
}

int main(int argc, char** argv) {
  std::string dir;
  int threads = 64;
  size_t value_bytes = 100;
  double seconds = 10;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (a == "--dir") dir = next();
    else if (a == "--threads") threads = std::atoi(next());
    else if (a == "--value-bytes") value_bytes = std::strtoul(next(), nullptr, 10);
    else if (a == "--seconds") seconds = std::atof(next());
    else if (a == "--json") json = true;
    else usage();
  }
  if (dir.empty() || threads < 1 || seconds <= 0) usage();

  rocksdb::Options options;
  options.create_if_missing = true;
  options.error_if_exists = false;
  // Defaults otherwise: one WAL, fdatasync (use_fsync = false), pipelined writes off,
  // concurrent memtable writes on: RocksDB's ordinary configuration.
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir, &db);
  if (!s.ok()) {
    std::fprintf(stderr, "rocksdb_sync: cannot open %s: %s\n", dir.c_str(), s.ToString().c_str());
    return 2;
  }

  rocksdb::WriteOptions wo;
  wo.sync = true;
  const std::string value(value_bytes, 'v');
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::vector<std::vector<uint32_t>> lat_us(threads);  // per-Put latency, microseconds
  const uint64_t run_id = static_cast<uint64_t>(
      std::chrono::system_clock::now().time_since_epoch().count());

  auto start = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      auto& lat = lat_us[t];
      lat.reserve(1 << 16);
      char key[64];
      for (uint64_t n = 0; !stop.load(std::memory_order_relaxed); n++) {
        int kl = std::snprintf(key, sizeof key, "%016llx-%03d-%llu",
                               (unsigned long long)run_id, t, (unsigned long long)n);
        auto t0 = Clock::now();
        rocksdb::Status st = db->Put(wo, rocksdb::Slice(key, kl), value);
        auto t1 = Clock::now();
        if (!st.ok()) {
          std::fprintf(stderr, "rocksdb_sync: Put failed: %s\n", st.ToString().c_str());
          failed = true;
          stop = true;
          return;
        }
        lat.push_back(static_cast<uint32_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count()));
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : ts) th.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();

  std::vector<uint32_t> all;
  for (auto& v : lat_us) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) -> double {
    if (all.empty()) return 0;
    size_t i = static_cast<size_t>(p * (all.size() - 1) + 0.5);
    return all[i] / 1000.0;
  };
  double rate = all.size() / elapsed;
  if (json) {
    std::printf("{\"threads\": %d, \"value_bytes\": %zu, \"seconds\": %.3f, \"acked\": %zu, "
                "\"acked_per_s\": %.1f, \"latency_ms\": {\"p50\": %.3f, \"p99\": %.3f}}\n",
                threads, value_bytes, elapsed, all.size(), rate, pct(0.50), pct(0.99));
  } else {
    std::printf("rocksdb sync=true: %d threads, %zu-byte values, %.1f s: %zu acked, %.0f writes/s, "
                "p50 %.3f ms, p99 %.3f ms\n",
                threads, value_bytes, elapsed, all.size(), rate, pct(0.50), pct(0.99));
  }
  delete db;
  return failed ? 1 : 0;
}
