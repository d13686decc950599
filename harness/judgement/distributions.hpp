#pragma once
// The normal and Student's t distributions the verdicts are built on: cdf and quantile. Written
// here (no Boost.Math) because they are small and their reference values are tested against
// scipy's.
namespace encbench::judgement {

double normal_cdf(double z);
double normal_quantile(double p);                // p in (0, 1)
double student_t_cdf(double t, double df);       // df > 0
double student_t_quantile(double p, double df);  // p in (0, 1), df > 0; throws InvalidInput otherwise

}  // namespace encbench::judgement
