#include "sim/noc/network.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/collective/engines.h"
#include "sim/common/clock.h"
#include "sim/common/error.h"
#include "sim/noc/flit_mesh.h"
#include "sim/noc/packet_net.h"

namespace tessera::sim {

std::unique_ptr<Transport> make_transport(const Config& cfg, TraceRecorder* trace) {
  if (cfg.system.model == NocModel::Flit && cfg.system.chips > 1)
    throw ConfigError(fmt::format("config {}: system.model \"flit\" covers the links between chips for collectives "
                                  "and pipelines run alone (tessera collective, train, pipeline); programs on cores "
                                  "run them at packet level (set system.model to \"packet\")", cfg.name));
  if (cfg.chip.mesh && cfg.chip.mesh->model == NocModel::Flit)
    return std::make_unique<FlitMesh>(cfg, trace);
  return std::make_unique<PacketNetwork>(cfg, trace);
}

Network::Network(sc_core::sc_module_name name, const Config& cfg, TraceRecorder* trace)
    : sc_core::sc_module(name), transport_(make_transport(cfg, trace)),
      unmatched_count_(cfg.total_cores(), 0),
      relayouts_(cfg.total_cores(), [this](std::uint64_t id, std::uint32_t src, std::uint32_t dst, Bytes bytes, Cycles when) {
        ++messages_;
        transport_->inject(id, src, dst, bytes, when);
        wake_at(when);
      }) {
  transport_->set_listener(this);
  SC_METHOD(step);
  sensitive << wake_;
  dont_initialize();
}

// Half a cycle after t: every core has acted at t.
void Network::wake_at(Cycles t) {
  const sc_core::sc_time at = sc_core::sc_time::from_value(t * kTicksPerCycle + kTicksPerCycle / 2);
  wake_.notify(at - sc_core::sc_time_stamp());
}

Network::~Network() = default;

namespace {

// The first tick at which something other than the network acts in the kernel: a delta
// notification counts as now.
sc_core::sc_time::value_type kernel_horizon() {
  if (sc_core::sc_pending_activity_at_current_time()) return sc_core::sc_time_stamp().value();
  return (sc_core::sc_time_stamp() + sc_core::sc_time_to_pending_activity()).value();
}

}  // namespace

// Processes the network's cycles from now on, one after another without a trip through the
// kernel, until the next one lies at or after something else's activity (a core's next action,
// a completion this step notified). A wake-up through the kernel for every event cycle was about
// a third of the time of a link crossed by thousands of packets while the cores only wait.
// Cycle c may be processed early while nothing else acts up to the half cycle after it (then
// every core has issued what it issues at c). Only what this step notifies (a completion, from
// sent(), delivered() or the collective engine) can bring that activity nearer, so the kernel is
// asked again only after a notification: asking every event cycle was a sixth of the
// instructions of 1472 cores sending 128 KiB each across vipu-2's chip link (callgrind).
void Network::step() {
  Cycles now = now_cycles();
  std::uint64_t asked_at = notices_ + 1;  // not yet asked
  sc_core::sc_time::value_type horizon = 0;
  for (;;) {
    if (engine_) engine_->process(now);  // what the engine does at `now` enters the transport at `now`
    transport_->advance(now);
    Cycles next = transport_->next_event();
    if (engine_) next = std::min(next, engine_->next_event());
    if (next == kNever) return;
    if (asked_at != notices_) {
      horizon = kernel_horizon();
      asked_at = notices_;
    }
    if (next * kTicksPerCycle + kTicksPerCycle / 2 >= horizon) {
      wake_at(next);
      return;
    }
    now = next;
  }
}

bool Network::quiet_at(Cycles t) const {
  return !engine_ && pending_.empty() && pool_.live() == 0 && relayouts_.idle() && transport_->quiet_at(t);
}

void Network::read_counters(std::vector<std::uint64_t>& out) const {
  out.push_back(messages_);
  transport_->read_counters(out);
}

void Network::add_counter(std::size_t i, std::uint64_t delta) {
  if (i == 0) messages_ += delta;
  else transport_->add_counter(i - 1, delta);
}

void Network::attach_collectives(const Config& cfg, const std::vector<CollectiveSpec>& specs,
                                 const std::string& engine) {
  auto* packets = dynamic_cast<PacketNetwork*>(transport_.get());
  if (!packets)
    throw Error("collective items run on the packet level (chip.mesh.model \"flit\" has no links between chips)");
  if (!cfg.system.afi)
    throw Error(fmt::format("collective items: config {} has no system.afi (docs/config.md)", cfg.name));
  chips_ = cfg.system.chips;
  cores_per_chip_ = cfg.chip.cores;
  std::vector<std::pair<CollectiveSpec, Cycles>> issued;  // each when its chips reach it
  for (const CollectiveSpec& s : specs) issued.emplace_back(s, 0);
  collective_plan_ = std::make_unique<CollectivePlan>(plan_collectives(cfg, engine, issued));
  engine_ = make_engine(cfg, engine, *collective_plan_, *packets, kEngineIds);
  collective_waiting_.assign(std::size_t{chips_} * specs.size(), nullptr);
  engine_->on_done = [this](std::uint32_t c, std::uint32_t chip, Cycles when) {
    // reported while the engine processes cycle `when` (half a cycle after it): the core goes on
    // at the next cycle
    ++notices_;
    Completion* done = collective_waiting_[std::size_t{c} * chips_ + chip];
    if (done) done->complete(when + 1);
  };
}

void Network::collective(std::uint32_t core, std::uint32_t index, Completion& done) {
  const std::uint32_t chip = core / cores_per_chip_;
  collective_waiting_[std::size_t{index} * chips_ + chip] = &done;
  const Cycles now = now_cycles();
  engine_->issue(index, chip, now);
  wake_at(now);
}

std::vector<Cycles> Network::collectives_done() const {
  return engine_ ? engine_->done() : std::vector<Cycles>{};
}

void Network::send(std::uint32_t src, std::uint32_t dst, Bytes bytes,
                   std::shared_ptr<const Payload> payload, Completion& done) {
  const std::uint32_t m = pool_.acquire();
  Message& msg = pool_[m];
  msg = Message{};
  msg.src = src;
  msg.dst = dst;
  msg.bytes = bytes;
  msg.payload = std::move(payload);
  msg.sent = &done;
  ++messages_;
  // a receive already posted for it?
  const std::uint64_t key = pair_key(dst, src);
  auto [it, added] = pending_.try_emplace(key);
  Pending& q = it->second;
  if (!added && q.posts) {
    const std::uint32_t r = q.head;
    q.head = posts_[r].next;
    if (q.head == ~0u) pending_.erase(it);
    const Posted p = posts_[r];
    posts_.release(r);
    match(m, p.bytes, *p.done);
  } else {
    if (q.head == ~0u) q.head = m;
    else pool_[q.tail].next = m;
    q.tail = m;
    ++unmatched_count_[dst];
  }
  const Cycles now = now_cycles();
  transport_->inject(m, src, dst, bytes, now);
  wake_at(now);
}

void Network::recv(std::uint32_t dst, std::uint32_t src, Bytes bytes, Completion& done) {
  auto [it, added] = pending_.try_emplace(pair_key(dst, src));
  Pending& q = it->second;
  if (added || q.posts) {
    const std::uint32_t r = posts_.acquire();
    posts_[r] = Posted{bytes, &done, ~0u};
    q.posts = true;
    if (q.head == ~0u) q.head = r;
    else posts_[q.tail].next = r;
    q.tail = r;
    return;
  }
  const std::uint32_t m = q.head;
  q.head = pool_[m].next;
  if (q.head == ~0u) pending_.erase(it);
  --unmatched_count_[dst];
  match(m, bytes, done);
}

void Network::match(std::uint32_t m, Bytes recv_bytes, Completion& done) {
  Message& msg = pool_[m];
  if (msg.bytes != recv_bytes)
    done.error = fmt::format("core {} posted a recv of {} bytes from core {}, but the matching send "
                             "carries {} bytes", msg.dst, recv_bytes, msg.src, msg.bytes);
  msg.matched = true;
  msg.received = &done;
  if (msg.delivered) {
    done.payload = std::move(msg.payload);
    done.complete(std::max(msg.arrival, now_cycles()));
    release(m);
  }
}

void Network::release(std::uint32_t m) {
  Message& msg = pool_[m];
  if (msg.delivered && msg.matched && !msg.sent) {
    msg.payload.reset();
    pool_.release(m);
  }
}

void Network::relayout(std::uint32_t core, std::uint32_t relayout, std::uint32_t pieces, const RelayoutStep* steps,
                       std::size_t count, StepSink& sink, Completion& done) {
  relayouts_.start(core, relayout, pieces, steps, count, now_cycles(), sink, done);
}

void Network::sent(std::uint64_t message, Cycles when) {
  ++notices_;
  if (message >= kEngineIds) return engine_->sent(message - kEngineIds, when);
  if (message >= RelayoutEngine::kIds) return relayouts_.sent(message, when);
  Message& msg = pool_[message];
  msg.sent->complete(when);
  msg.sent = nullptr;
  release(static_cast<std::uint32_t>(message));
}

void Network::delivered(std::uint64_t message, Cycles when) {
  ++notices_;
  if (message >= kEngineIds) return engine_->delivered(message - kEngineIds, when);
  if (message >= RelayoutEngine::kIds) return relayouts_.delivered(message, when);
  Message& msg = pool_[message];
  msg.delivered = true;
  msg.arrival = when;
  if (msg.matched) {
    msg.received->payload = std::move(msg.payload);
    msg.received->complete(when);
  }
  release(static_cast<std::uint32_t>(message));
}

}  // namespace tessera::sim
