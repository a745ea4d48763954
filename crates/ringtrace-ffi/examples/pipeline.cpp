// A C++ program traced with ringtrace: a producer and a consumer thread
// (std::thread, lambdas, a class, std::string) record pipeline events.
//
//   pipeline OUTDIR     records into OUTDIR through the session API
//   pipeline            records only if RINGTRACE_SESSION is set
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <ringtrace.h>

namespace {

// Owns a session: started on construction, trace completed on destruction.
class TraceSession {
  public:
    explicit TraceSession(const std::string &dir) {
        std::string spec = dir + ",discard,per-thread,subbuf=64k,count=8,cpp:*";
        s_ = ringtrace_session_create("cpp-example", spec.c_str());
        if (s_ == nullptr) throw std::runtime_error(ringtrace_last_error());
        ringtrace_session_start(s_);
    }
    ~TraceSession() {
        if (ringtrace_session_destroy(s_) != 0)
            std::fprintf(stderr, "pipeline: %s\n", ringtrace_last_error());
    }
    TraceSession(const TraceSession &) = delete;
    TraceSession &operator=(const TraceSession &) = delete;

  private:
    ringtrace_session *s_;
};

struct Stage {
    std::string name;
    double weight;
    void run(unsigned item) const {
        RINGTRACE_EVENT(cpp, stage, RT_STR(name, name.c_str()), RT_U32(item, item),
                        RT_F64(weight, weight));
    }
};

}  // namespace

int main(int argc, char **argv) {
    std::unique_ptr<TraceSession> session;
    if (argc > 1) session = std::make_unique<TraceSession>(argv[1]);
    const std::vector<Stage> stages{{"parse", 0.5}, {"plan", 1.5}, {"exec", 3.0}};
    auto producer = [&] {
        for (unsigned i = 0; i < 500; i++) {
            RINGTRACE_EVENT(cpp, produce, RT_U32(item, i), RT_BOOL(last, i == 499));
            for (const auto &s : stages) s.run(i);
        }
    };
    std::thread a(producer), b(producer);
    a.join();
    b.join();
    RINGTRACE_EVENT0(cpp, finished);
    std::printf("emitted %u\n", 2u * 500u * 4u + 1u);
    session.reset();
    std::printf("done\n");
    return 0;
}
