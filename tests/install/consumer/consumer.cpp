/* consumer.cpp: a C++ program outside tarn's tree that uses the installed
 * headers as a strict C++11 project would (old-style casts, 0 as a null
 * pointer and casts dropping const are warnings, and warnings errors):
 * tarn_submit and its item macros, a const argument, the inline slab
 * allocation. Prints "tarn from C++: 4". */
#include <tarn.h>

#include <cstddef>
#include <cstdio>

static int add_two(tarn_task *t, void *arg) {
  const double *two = static_cast<const double *>(arg);
  double *x = static_cast<double *>(tarn_task_data(t, 0));
  *x += *two;
  return 0;
}

int main() {
  tarn_rt *rt = nullptr;
  tarn_ref *x = nullptr;
  tarn_region *region = nullptr;
  if (tarn_rt_create(nullptr, &rt) != 0 ||
      tarn_ref_alloc(tarn_rt_pool(rt), sizeof(double), 0, &x) != 0 ||
      tarn_region_begin(rt, &region) != 0)
    return 1;
  static const double two = 2.0;
  void *zero = nullptr;
  if (tarn_ref_pin(x, TARN_WRITE, 0, &zero) != 0) return 1;
  *static_cast<double *>(zero) = 0.0;
  if (tarn_ref_unpin(x) != 0) return 1;
  std::size_t level = 1; /* a priority not of int: no narrowing error */
  int rc = tarn_submit(rt, add_two, TARN_ARG(&two), TARN_RW(x),
                       TARN_PRIORITY(level), TARN_NAME("add two"));
  if (rc == 0) rc = tarn_submit(rt, add_two, TARN_ARG(&two), TARN_RW(x));
  if (rc == 0) rc = tarn_region_wait(region, nullptr);
  double sum = 0.0;
  void *bytes = nullptr;
  if (rc == 0 && (rc = tarn_ref_pin(x, TARN_READ, 0, &bytes)) == 0) {
    sum = *static_cast<double *>(bytes);
    rc = tarn_ref_unpin(x);
  }
  tarn_ref_release(x);
  tarn_slab_set *set = nullptr;
  tarn_slab *slab = nullptr;
  void *block = nullptr;
  if (rc == 0 && (tarn_slab_set_create(nullptr, &set) != 0 ||
                  tarn_slab_acquire(set, &slab) != 0 ||
                  tarn_slab_alloc(slab, 64, 16, &block) != 0))
    rc = 1;
  if (slab != nullptr) tarn_slab_release(set, slab);
  tarn_slab_set_destroy(set);
  if (tarn_rt_destroy(rt) != 0 || rc != 0) return 1;
  std::printf("tarn from C++: %g\n", sum);
  return 0;
}
