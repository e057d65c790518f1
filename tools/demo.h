/* demo.h: `tarn demo`, a linear system larger than tarn's memory limit
 * solved by tiled Cholesky, with its figures (tools/demo.c). */
#ifndef TARN_TOOLS_DEMO_H
#define TARN_TOOLS_DEMO_H

/* Runs `tarn demo` with the arguments after "demo". Returns the exit
 * status: 0 when the answer is right, 1 when it is not or a call failed,
 * 2 for a bad command line. Not thread-safe (prints to stdout/stderr). */
int tarn_demo(int argc, char **argv);

#endif
