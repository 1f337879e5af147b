/* pipebench's help texts and the names its command line knows (src/cli/help.c). */
#ifndef PB_HELP_H
#define PB_HELP_H

typedef struct pb_cli_help {
  const char *command;
  const char *text; /* the whole page: usage line, what it does, its options */
} pb_cli_help;

/* The global usage (`pipebench --help`, `pipebench help`). */
const char *pb_cli_usage(void);
/* One command's page, or NULL for a name that is not a command. */
const pb_cli_help *pb_cli_help_for(const char *command);
/* The command or long option nearest a mistyped one ("--cofig" -> "--config"), or NULL when none is near. */
const char *pb_cli_nearest_command(const char *word);
const char *pb_cli_nearest_option(const char *word);
/* The long option a short one stands for ("-c" -> "--config"); any other argument as it is. */
const char *pb_cli_long_option(const char *arg);

#endif
