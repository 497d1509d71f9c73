// Whether GPU tracing can work, and the reason when it cannot: on this very
// machine through the C ABI (no driver in CI: a clear reason, the call to turn
// it on fails with PK_ERR_UNSUPPORTED, CPU recording goes on), and for every
// reason the probe knows, with the libraries it loads replaced by fakes.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "profkit/profkit.h"
#include "test_support.h"

#ifdef PROFKIT_HAVE_CUPTI
#include "cupti/availability.h"
#endif

namespace {

using profkit_test::collect;
using profkit_test::reset_engine;

[[maybe_unused]] bool driver_installed() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return h != nullptr;
}

TEST(GpuAvailability, ThisMachineGetsAReasonAndTheCpuIsUnaffected) {
  reset_engine();
  const char* reason = nullptr;
  const int32_t available = pk_gpu_available(&reason);
  ASSERT_NE(reason, nullptr);
  ASSERT_GT(std::string(reason).size(), 20u) << "a sentence, not a code";
  EXPECT_EQ(pk_gpu_available(nullptr), available);  // NULL reason is fine
  if (available != 0) GTEST_SKIP() << "GPU tracing works here: " << reason;

#ifdef PROFKIT_HAVE_CUPTI
  if (!driver_installed()) {
    EXPECT_NE(std::string(reason).find("no CUDA driver (libcuda.so.1"), std::string::npos) << reason;
  }
#else
  EXPECT_NE(std::string(reason).find("built without CUPTI headers"), std::string::npos) << reason;
#endif

  EXPECT_EQ(pk_set_gpu_tracing(1), PK_ERR_UNSUPPORTED);
  const std::string error = pk_last_error();
  EXPECT_NE(error.find(reason), std::string::npos) << error;
  EXPECT_NE(error.find("profiling the CPU only"), std::string::npos) << error;
  EXPECT_EQ(pk_set_gpu_tracing(0), PK_OK);  // off always works

  // CPU recording is untouched by the failed request.
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("cpu work", PK_EVENT_USER_DEFINED);
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  auto r = collect();
  size_t n = 0;
  const pk_host_event* events = pk_result_host_events(r.get(), &n);
  ASSERT_EQ(n, 1u);
  EXPECT_STREQ(pk_result_string(r.get(), events[0].name), "cpu work");
  size_t device_events = 0;
  pk_result_device_events(r.get(), &device_events);
  EXPECT_EQ(device_events, 0u);
  EXPECT_EQ(pk_result_device_count(r.get()), 0u);
}

TEST(GpuAvailability, TheReasonOutlivesTheThreadThatAskedForIt) {
  // The header promises static storage; the text was a thread_local, freed
  // when the asking thread exited while its caller could still read it.
  const char* from_exited_thread = nullptr;
  std::thread([&] { pk_gpu_available(&from_exited_thread); }).join();
  ASSERT_NE(from_exited_thread, nullptr);
  const char* from_here = nullptr;
  pk_gpu_available(&from_here);
  // One text for every thread, so the exited thread's pointer is this one.
  EXPECT_EQ(from_exited_thread, from_here);
  EXPECT_STREQ(from_exited_thread, from_here);
}

#ifdef PROFKIT_HAVE_CUPTI

using profkit::cupti::GpuSupport;
using profkit::cupti::OpenedLibrary;
using profkit::cupti::ProbeInputs;

OpenedLibrary open_path(const char* path) {
  OpenedLibrary lib;
  lib.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  lib.path = path;
  lib.origin = "test";
  return lib;
}

void* fake_cupti() {
  static void* h = dlopen(FAKE_CUPTI_PATH, RTLD_NOW | RTLD_LOCAL);
  return h;
}

template <class Fn>
Fn control(const char* name) {
  return reinterpret_cast<Fn>(dlsym(fake_cupti(), name));
}

// Everything present: a driver, a device node, a matching CUPTI.
ProbeInputs healthy() {
  ProbeInputs in;
  in.file_exists = [](const char*) { return true; };
  in.open_driver = [](std::string*) { return open_path(FAKE_CUDA_PATH); };
  in.open_cupti = [](const profkit::cupti::SearchEnvironment&, int, std::string*) {
    return open_path(FAKE_CUPTI_PATH);
  };
  in.compiled_cupti_version = CUPTI_API_VERSION;
  control<void (*)()>("fake_cupti_reset")();
  return in;
}

TEST(GpuProbe, AHealthyMachineIsAvailableAndSaysWhatItFound) {
  const GpuSupport s = probe_gpu_support(healthy());
  EXPECT_TRUE(s.available) << s.reason;
  EXPECT_NE(s.reason.find("CUPTI " + std::to_string(CUPTI_API_VERSION)), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find(FAKE_CUPTI_PATH), std::string::npos) << s.reason;
  EXPECT_NE(s.cupti.flush_all, nullptr);
  EXPECT_NE(s.driver.device_get_attribute, nullptr);
}

TEST(GpuProbe, NoDriver) {
  ProbeInputs in = healthy();
  in.open_driver = [](std::string* error) {
    *error = "no CUDA driver (libcuda.so.1 could not be loaded: not here)";
    return OpenedLibrary{};
  };
  const GpuSupport s = probe_gpu_support(in);
  EXPECT_FALSE(s.available);
  EXPECT_EQ(s.reason, "no CUDA driver (libcuda.so.1 could not be loaded: not here)");
}

TEST(GpuProbe, ADriverLibraryWithoutItsEntryPointsIsTooOld) {
  ProbeInputs in = healthy();
  in.open_driver = [](std::string*) { return open_path("libm.so.6"); };
  const GpuSupport s = probe_gpu_support(in);
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.reason.find("has no cuInit"), std::string::npos) << s.reason;
}

TEST(GpuProbe, NoGpuDeviceNode) {
  ProbeInputs in = healthy();
  in.file_exists = [](const char*) { return false; };
  const GpuSupport s = probe_gpu_support(in);
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.reason.find("no NVIDIA GPU"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("/dev/nvidiactl"), std::string::npos) << s.reason;
}

TEST(GpuProbe, NoLibcupti) {
  ProbeInputs in = healthy();
  in.open_cupti = [](const profkit::cupti::SearchEnvironment&, int major, std::string* error) {
    EXPECT_EQ(major, CUPTI_API_VERSION / 10000);
    *error = "no libcupti found (searched here and there)";
    return OpenedLibrary{};
  };
  const GpuSupport s = probe_gpu_support(in);
  EXPECT_FALSE(s.available);
  EXPECT_EQ(s.reason, "no libcupti found (searched here and there)");
}

TEST(GpuProbe, ALibcuptiWithoutTheEntryPoints) {
  ProbeInputs in = healthy();
  in.open_cupti = [](const profkit::cupti::SearchEnvironment&, int, std::string*) { return open_path("libm.so.6"); };
  const GpuSupport s = probe_gpu_support(in);
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.reason.find("has no cuptiGetVersion"), std::string::npos) << s.reason;
}

TEST(GpuProbe, ACuptiOfAnotherCudaMajorIsRefused) {
  ProbeInputs in = healthy();
  control<void (*)(uint32_t)>("fake_cupti_set_version")(24);  // CUDA 12.6
  const GpuSupport s = probe_gpu_support(in);
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.reason.find("from CUDA 12"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("CUDA 13"), std::string::npos) << s.reason;
}

TEST(GpuProbe, AnOlderCuptiOfTheSameMajorIsRefusedANewerOneAccepted) {
  ProbeInputs in = healthy();
  in.compiled_cupti_version = 130100;  // CUDA 13.1 headers
  control<void (*)(uint32_t)>("fake_cupti_set_version")(130001);
  GpuSupport s = probe_gpu_support(in);
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.reason.find("older than the CUPTI headers"), std::string::npos) << s.reason;
  control<void (*)(uint32_t)>("fake_cupti_set_version")(130102);
  s = probe_gpu_support(in);
  EXPECT_TRUE(s.available) << s.reason;
}

TEST(GpuProbe, AnEarlierUpdateOfTheSameCudaMinorIsAccepted) {
  // Built with CUDA 13.0 Update 1 headers (130001); PyTorch cu130 brings
  // CUPTI 13.0 GA (130000): same record structs, so it must trace.
  ProbeInputs in = healthy();
  in.compiled_cupti_version = 130001;
  control<void (*)(uint32_t)>("fake_cupti_set_version")(130000);
  const GpuSupport s = probe_gpu_support(in);
  EXPECT_TRUE(s.available) << s.reason;
  EXPECT_EQ(profkit::cupti::cupti_version_problem(130000, 130001), "");
  EXPECT_NE(profkit::cupti::cupti_version_problem(130099, 130100), "");
  EXPECT_NE(profkit::cupti::cupti_version_problem(24, 26), "");  // CUDA 12.6 CUPTI, 12.8 headers
}

TEST(GpuProbe, PROFKIT_CUPTI_PATH_IsSearchedFirst) {
  profkit::cupti::SearchEnvironment env;
  env.profkit_cupti_path = FAKE_CUPTI_PATH;
  std::string error;
  const OpenedLibrary lib = profkit::cupti::open_cupti(env, CUPTI_API_VERSION / 10000, &error);
  ASSERT_TRUE(lib) << error;
  EXPECT_EQ(lib.origin, "PROFKIT_CUPTI_PATH");
  EXPECT_EQ(lib.path, FAKE_CUPTI_PATH);
}

TEST(GpuProbe, CuptiVersionsMapToCudaMajors) {
  EXPECT_EQ(profkit::cupti::cupti_cuda_major(130001), 13);
  EXPECT_EQ(profkit::cupti::cupti_cuda_major(130300), 13);
  EXPECT_EQ(profkit::cupti::cupti_cuda_major(140000), 14);
  EXPECT_EQ(profkit::cupti::cupti_cuda_major(28), 12);
  EXPECT_EQ(profkit::cupti::cupti_cuda_major(19), 12);
  EXPECT_EQ(profkit::cupti::cupti_cuda_major(18), 11);
  EXPECT_EQ(profkit::cupti::cupti_version_problem(130001, 130001), "");
}

TEST(GpuProbe, CuptiFailuresNameTheirCause) {
  using profkit::cupti::cupti_failure_reason;
  const std::string multiple =
      cupti_failure_reason("cuptiSubscribe", CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "MULTIPLE");
  EXPECT_NE(multiple.find("cuptiSubscribe failed"), std::string::npos);
  EXPECT_NE(multiple.find("another CUPTI subscriber"), std::string::npos);
  EXPECT_NE(multiple.find("Nsight"), std::string::npos);
  EXPECT_NE(multiple.find("TEARDOWN_CUPTI=1"), std::string::npos);  // what lets torch.profiler go
  const std::string privileges =
      cupti_failure_reason("cuptiActivityEnable", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "PRIVILEGES");
  EXPECT_NE(privileges.find("insufficient privileges"), std::string::npos);
  EXPECT_NE(privileges.find("NVreg_RestrictProfilingToAdminUsers"), std::string::npos);
  EXPECT_EQ(cupti_failure_reason("x", CUPTI_ERROR_UNKNOWN, "CUPTI_ERROR_UNKNOWN"), "x failed with CUPTI_ERROR_UNKNOWN");
}

#endif  // PROFKIT_HAVE_CUPTI

}  // namespace
