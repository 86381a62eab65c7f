// The two levels of detail held to arithmetic and to each other, on an 8x8 mesh: 16 B links
// (one 16-byte flit per cycle), 128-byte packets (8 flits), link latency 1, router latency 2;
// packet level with 4-packet input buffers, flit level with 4 VCs of 8 flits per input port.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/noc/network.h"
#include "sim/traffic/traffic.h"
#include "test/support.h"

using namespace tessera;

namespace {

Json mesh8(const std::string& model, bool torus = false, std::uint32_t k = 8) {
  Json c = test::mesh_config(k, k, 512, torus);
  auto& m = c["chip"]["mesh"];
  m["model"] = model;
  m["link_bytes_per_cycle"] = 16;
  m["ni_bytes_per_cycle"] = 16;
  m["packet_bytes"] = 128;
  m["vcs"] = 4;
  m["vc_buffer_bytes"] = 128;
  return c;
}

struct Arrival : sim::TransportListener {
  Cycles sent_at = 0, delivered_at = 0;
  void sent(std::uint64_t, Cycles t) override { sent_at = t; }
  void delivered(std::uint64_t, Cycles t) override { delivered_at = t; }
};

// One packet alone from src to dst: the cycle its tail is at the destination.
Cycles zero_load(const sim::Config& cfg, std::uint32_t src, std::uint32_t dst, Bytes bytes) {
  auto net = sim::make_transport(cfg, nullptr);
  Arrival a;
  net->set_listener(&a);
  net->inject(0, src, dst, bytes, 0);
  for (Cycles t = net->next_event(); t != kNever; t = net->next_event()) net->advance(t);
  return a.delivered_at;
}

sim::TrafficSpec uniform(double flits_per_node_cycle) {
  sim::TrafficSpec s;
  s.rate = flits_per_node_cycle;
  s.rate_in_flits = true;
  s.warmup_cycles = 2000;
  s.measure_cycles = 8000;
  s.seed = 7;
  return s;
}

}  // namespace

TEST_CASE("zero-load latency per hop count equals the hand formula at both levels", "[noc][traffic]") {
  // 8 flits of serialisation once, the injection port's 2 cycles, then link + router = 3 per hop:
  // T = 8 + 2 + 3h, corner to corner (h = 14) 52. Both levels pay the same at zero load.
  for (const char* model : {"packet", "flit"}) {
    const sim::Config cfg = test::config(mesh8(model));
    for (std::uint32_t h = 1; h <= 14; ++h) {
      INFO(model << " level, " << h << " hops");
      const std::uint32_t dst = h <= 7 ? h : 7 + 8 * (h - 7);  // along row 0, then down column 7
      CHECK(zero_load(cfg, 0, dst, 128) == 8 + 2 + 3 * h);
    }
    // a message of 3 packets: two more packets of 8 flits behind the first
    CHECK(zero_load(cfg, 0, 63, 384) == 52 + 16);
    // a 1-flit packet (the last of a message may be short)
    CHECK(zero_load(cfg, 0, 63, 16) == 1 + 2 + 42);
  }
  // on a torus the wrap-around link makes 0 -> 7 one hop west
  CHECK(zero_load(test::config(mesh8("flit", true)), 0, 7, 128) == 13);
  CHECK(zero_load(test::config(mesh8("packet", true)), 0, 7, 128) == 13);
}

TEST_CASE("channel-load bound of uniform traffic on a k x k mesh", "[noc][traffic]") {
  // Dimension order on a k x k mesh, uniform over the other k^2 - 1 nodes: the middle links carry
  // k^3/4 of the k^2 (k^2 - 1) flows, so the bound is 4/k x (k^2 - 1)/k^2 flits per node per cycle.
  for (std::uint32_t k : {4u, 8u}) {
    const sim::Config cfg = test::config(mesh8("packet", false, k));
    const double n = double(k) * k;
    CHECK(sim::channel_load_bound(cfg, uniform(0.1)) == Approx(4.0 / k * (n - 1) / n));
  }
}

TEST_CASE("8x8 uniform traffic: the two levels agree, and stay under the channel-load bound", "[noc][traffic]") {
  const sim::Config pkt = test::config(mesh8("packet")), flit = test::config(mesh8("flit"));
  const double bound = sim::channel_load_bound(pkt, uniform(0.1));
  // saturation: accepted throughput when offered 1.3x the bound
  const sim::TrafficPoint ps = sim::run_traffic(pkt, uniform(1.3 * bound));
  const sim::TrafficPoint fs = sim::run_traffic(flit, uniform(1.3 * bound));
  CHECK(ps.saturated);
  CHECK(fs.saturated);
  CHECK(ps.accepted_flits <= bound);
  CHECK(fs.accepted_flits <= bound);
  CHECK(ps.accepted_flits >= 0.80 * bound);  // packet level, 4-packet buffers
  CHECK(fs.accepted_flits >= 0.65 * bound);  // flit level, 4 VCs of 8 flits
  const double saturation = std::min(ps.accepted_flits, fs.accepted_flits);
  INFO("saturation: packet " << ps.accepted_flits << ", flit " << fs.accepted_flits);
  // issue 10 asks for 15%; with both levels oldest-first they are 3.2% apart (0.435 and 0.420)
  CHECK(std::abs(ps.accepted_flits - fs.accepted_flits) <= 0.08 * std::max(ps.accepted_flits, fs.accepted_flits));
  // average latency within 10% of each other up to 90% of saturation. Both levels serve the
  // oldest packet first; while the flit level's allocators went round-robin (until the evening
  // of 2026-11-26) the two were 10.1% apart here at 70% (as a share of the flit level's, as
  // below), and on mesh-8x8.json (seed 7) the flit level saturated 15.2% lower (0.373 against
  // 0.440) and was 19% apart at 90% (65.8 against 53.3 cycles)
  for (double f : {0.1, 0.3, 0.5, 0.7, 0.9}) {
    const sim::TrafficPoint p = sim::run_traffic(pkt, uniform(f * saturation));
    const sim::TrafficPoint q = sim::run_traffic(flit, uniform(f * saturation));
    INFO("load " << f << " of saturation: packet " << p.latency_mean << ", flit " << q.latency_mean);
    CHECK(!p.saturated);
    CHECK(!q.saturated);
    CHECK(std::abs(p.latency_mean - q.latency_mean) <= 0.10 * q.latency_mean);
    CHECK(p.accepted_flits <= bound);
    CHECK(q.accepted_flits <= bound);
    CHECK(p.accepted_flits == Approx(p.offered_flits).epsilon(0.03));  // below saturation all is carried
  }
}

TEST_CASE("a hot spot saturates its tree and the network drains without deadlock", "[noc][traffic]") {
  // 20% of every node's packets go to the middle node: its ejection port (1 flit per cycle)
  // saturates at 1 / (63 x 0.2 x ...) of the uniform rate. Past it, latency grows with the length
  // of the run (queues grow without bound) while the hot node's ejection port stays busy.
  for (const char* model : {"packet", "flit"}) {
    INFO(model);
    const sim::Config cfg = test::config(mesh8(model));
    sim::TrafficSpec s = uniform(0.1);
    s.pattern = sim::Pattern::Hotspot;
    s.hotspot_fraction = 0.2;
    const double bound = sim::channel_load_bound(cfg, s);
    CHECK(bound < 0.1);  // the hot spot's ejection port is the bottleneck
    s.rate = 2 * bound;
    s.inject_during_drain = false;
    s.drain_cycles = 2000000;
    s.measure_cycles = 2000;
    const sim::TrafficPoint shorter = sim::run_traffic(cfg, s);
    s.measure_cycles = 8000;
    const sim::TrafficPoint longer = sim::run_traffic(cfg, s);
    CHECK(longer.latency_mean > 2 * shorter.latency_mean);
    // overloaded (less carried than offered), yet no deadlock: once injection stops, every
    // packet of the window arrives
    CHECK(shorter.saturated);
    CHECK(longer.saturated);
    CHECK(shorter.delivered_packets == shorter.measured_packets);
    CHECK(longer.delivered_packets == longer.measured_packets);
    for (const auto& [name, u] : longer.link_utilization)
      if (name == "chip0.r4c4.eject") CHECK(u > 0.95);
  }
}

TEST_CASE("a torus does not deadlock at saturation (dateline classes)", "[noc][traffic]") {
  for (const char* model : {"packet", "flit"}) {
    INFO(model);
    const sim::Config cfg = test::config(mesh8(model, true, 4));
    sim::TrafficSpec s = uniform(0.99);
    s.inject_during_drain = false;
    s.drain_cycles = 1000000;
    const sim::TrafficPoint p = sim::run_traffic(cfg, s);
    CHECK(p.saturated);  // offered far more than the bound
    CHECK(p.measured_packets > 0);
    CHECK(p.delivered_packets == p.measured_packets);
  }
}

TEST_CASE("synthetic traffic is deterministic", "[noc][traffic]") {
  for (const char* model : {"packet", "flit"}) {
    const sim::Config cfg = test::config(mesh8(model));
    const Json a = sim::point_json(sim::run_traffic(cfg, uniform(0.3)), true);
    const Json b = sim::point_json(sim::run_traffic(cfg, uniform(0.3)), true);
    CHECK(a.dump() == b.dump());
  }
}

TEST_CASE("synthetic traffic: bad specs are named errors", "[noc][traffic][bad-input]") {
  const sim::Config cfg = test::config(mesh8("packet"));
  sim::TrafficSpec s = uniform(1.0);
  CHECK_THROWS_WITH(sim::validate_traffic(cfg, s), Catch::Contains("expected more than 0 and less than 1"));
  s.rate = 0.1;
  s.pattern = sim::Pattern::BitComplement;
  CHECK_NOTHROW(sim::validate_traffic(cfg, s));
  CHECK_THROWS_WITH(sim::validate_traffic(test::config(test::mesh_config(10, 12)), s),
                    Catch::Contains("bit-complement needs a power-of-two core count"));
  s.pattern = sim::Pattern::Transpose;
  CHECK_THROWS_WITH(sim::validate_traffic(test::config(test::mesh_config(4, 8)), s),
                    Catch::Contains("transpose needs a square mesh"));
  CHECK_THROWS_WITH(sim::validate_traffic(test::config(test::exchange_config()), s),
                    Catch::Contains("needs a single mesh chip"));
  CHECK_THROWS_WITH(sim::parse_pattern("tornado"), Catch::Contains("unknown traffic pattern \"tornado\""));
}

TEST_CASE("network configs: bad levels of detail and buffers are named errors", "[noc][bad-input]") {
  auto fails = [](Json c, const std::string& what) {
    CHECK_THROWS_WITH(test::config(c), Catch::Contains(what));
  };
  Json c = mesh8("wormhole");
  fails(c, "unknown model \"wormhole\" (expected \"packet\" or \"flit\")");
  c = mesh8("flit");
  c["chip"]["mesh"]["vcs"] = 0;
  fails(c, "chip.mesh.vcs");
  c = mesh8("flit");
  c["chip"]["mesh"]["vc_buffer_bytes"] = 8;
  fails(c, "must hold at least one flit (16 bytes)");
  c = mesh8("packet");
  c["chip"]["mesh"]["buffer_bytes"] = 64;
  fails(c, "must hold at least one packet (128 bytes)");
  c = mesh8("flit", true);
  c["chip"]["mesh"]["vcs"] = 1;
  fails(c, "a torus needs at least 2 virtual channels");
  c = mesh8("flit");
  c["chip"]["mesh"]["link_bytes_per_cycle"] = 12.5;
  fails(c, "must be a whole number of bytes");
}
