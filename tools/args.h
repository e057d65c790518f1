/* args.h: numbers from the tarn command's arguments, read the same way by
 * every subcommand (tools/args.c), and the check of tarn's environment. The
 * whole text must be the number and start with a digit: no sign and no space,
 * which strtoull would otherwise take (and wrap "-5" or " -5" to an enormous
 * value). */
#ifndef TARN_TOOLS_ARGS_H
#define TARN_TOOLS_ARGS_H

#include <stdbool.h>
#include <stddef.h>

/* Whether `text` is an integer from min to max (min >= 0); *out gets it. */
bool tarn_args_count(const char *text, long long min, long long max,
                     long long *out);

/* Whether tarn's environment variables are valid (tarn_env_check); when
 * one is not, says which and what it holds on standard error, as
 * "tarn COMMAND: TARN_WORKERS=\"zero\" in the environment is not valid
 * (...)", and returns false. */
bool tarn_args_environment(const char *command);

#endif
