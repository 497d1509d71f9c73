// The activity buffer pool: aligned buffers, recycled, capped, refusals
// counted, memory given back by trim().
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "cupti/buffer_pool.h"

namespace {

using profkit::cupti::ActivityBufferPool;

TEST(ActivityBufferPool, BuffersAreEightByteAlignedAndOfTheAskedSize) {
  ActivityBufferPool pool(4096 + 3, 4);
  EXPECT_EQ(pool.buffer_bytes(), 4096u);  // rounded down to the alignment
  uint8_t* b = pool.acquire();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % ActivityBufferPool::kAlignment, 0u);
  b[0] = 1;
  b[pool.buffer_bytes() - 1] = 2;  // the whole buffer is usable (ASan checks)
  pool.release(b);
}

TEST(ActivityBufferPool, ReleasedBuffersAreRecycled) {
  ActivityBufferPool pool(1024, 4);
  uint8_t* first = pool.acquire();
  pool.release(first);
  EXPECT_EQ(pool.acquire(), first);
  EXPECT_EQ(pool.allocated(), 1u);
  EXPECT_EQ(pool.outstanding(), 1u);
}

TEST(ActivityBufferPool, PastTheCapRequestsAreRefusedAndCounted) {
  ActivityBufferPool pool(1024, 2);
  uint8_t* a = pool.acquire();
  uint8_t* b = pool.acquire();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 2u);
  pool.release(a);
  EXPECT_EQ(pool.acquire(), a);  // room again once one comes back
  EXPECT_EQ(pool.refused(), 2u);
  pool.release(a);
  pool.release(b);
}

TEST(ActivityBufferPool, ForeignAndDoubleReleasesAreIgnored) {
  ActivityBufferPool pool(1024, 2);
  uint8_t stranger[16];
  pool.release(stranger);
  pool.release(nullptr);
  uint8_t* a = pool.acquire();
  pool.release(a);
  pool.release(a);  // twice
  EXPECT_EQ(pool.foreign_releases(), 2u);
  EXPECT_EQ(pool.acquire(), a);
  EXPECT_EQ(pool.acquire() == a, false);  // not handed out twice
}

TEST(ActivityBufferPool, TrimFreesOnlyWhatIsNotOut) {
  ActivityBufferPool pool(1024, 4);
  uint8_t* out = pool.acquire();
  uint8_t* back = pool.acquire();
  pool.release(back);
  EXPECT_EQ(pool.allocated(), 2u);
  pool.trim();
  EXPECT_EQ(pool.allocated(), 1u);
  EXPECT_EQ(pool.outstanding(), 1u);
  pool.release(out);
  pool.trim();
  EXPECT_EQ(pool.allocated(), 0u);
}

TEST(ActivityBufferPool, ConcurrentAcquireAndReleaseNeverHandOutOneBufferTwice) {
  ActivityBufferPool pool(256, 8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool] {
      for (int i = 0; i < 2000; ++i) {
        uint8_t* b = pool.acquire();
        if (b == nullptr) continue;
        // Owning the buffer exclusively: a marker survives until release.
        b[0] = 0x5a;
        std::this_thread::yield();
        EXPECT_EQ(b[0], 0x5a);
        b[0] = 0;
        pool.release(b);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(pool.allocated(), 8u);
  EXPECT_EQ(pool.outstanding(), 0u);
  EXPECT_EQ(pool.foreign_releases(), 0u);
}

}  // namespace
