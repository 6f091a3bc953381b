// The prose sections of abx(1), in roff; the commands' sections come from
// the command tree (man_page.cc). EXIT STATUS says what README's "Exit status"
// paragraph says.
#pragma once

namespace abx::cli {

inline constexpr const char* kManDescription = R"(.SH DESCRIPTION
.B abx
creates disposable, isolated Linux sandboxes (namespaces, cgroups, seccomp) and runs
commands in them. The CLI talks to a daemon,
.BR "abx serve" ,
which serves an E2B\-compatible API; the first command starts a local daemon when
none runs. Every command has its own help:
.B abx COMMAND \-\-help
(or
.BR "abx help COMMAND" ).
.B abx sandbox COMMAND
is the same as
.B abx COMMAND
(the e2b CLI's spelling).
)";

inline constexpr const char* kManExitStatus = R"(.SH EXIT STATUS
.TP
.B 0
Success.
.TP
.B 1
Any other failure of a command that runs nothing in a sandbox: a sandbox not found,
the daemon unreachable or refusing.
.TP
.B 2
A usage error: an unknown command or flag, a missing or extra argument, or a flag's
value that is wrong; found before abx does anything, and followed by the command's
usage line.
.PP
.BR "abx exec" ,
.B abx run
and
.B abx shell
exit with the command's own exit code (127 and 126 are the shell's: not found, not
executable), except:
.TP
.B 124
.B \-\-timeout
stopped the command.
.TP
.B 125
abx itself failed (no such sandbox or template, daemon unreachable, no command
given), as docker's do, so a script tells abx's failures from the command's codes.
.TP
.B 130
Ctrl\-C stopped the command.
.TP
.B 137
The command was killed: the sandbox ended under it (killed, its timeout expired), or
it reached the sandbox's memory limit (out of memory); a message on stderr names the
reason.
)";

inline constexpr const char* kManExamples = R"(.SH EXAMPLES
A sandbox, a command in it, then kill it:
.PP
.nf
.RS
id=$(abx create base)
abx exec "$id" \-\- uname \-a
abx exec \-it "$id" \-\- bash
abx kill \-\-yes "$id"
.RE
.fi
.PP
A one\-shot, as
.BR "docker run \-\-rm" ;
the exit status is the command's:
.PP
.nf
.RS
abx run base \-\- python3 \-c 'print(6 * 7)'
abx run \-\-memory 2g \-\-timeout 60 \-e MODE=test base \-\- ./check.sh
.RE
.fi
.PP
Files in and out, sandboxes and templates:
.PP
.nf
.RS
abx upload "$id" ./data.csv /home/user/data.csv
abx download "$id" /home/user/out.txt \-
abx list \-\-json
abx template build ./app \-\-name myapp
abx mcp install \-\-target claude
.RE
.fi
)";

inline constexpr const char* kManEnvironment = R"(.SH ENVIRONMENT
.TP
.B ABX_STATE_DIR
The daemon's data directory (default: $XDG_STATE_HOME/abx or ~/.local/state/abx).
.TP
.B ABX_CONFIG_DIR
Where the CLI's config.toml lives (default: $XDG_CONFIG_HOME/abx or ~/.config/abx).
.TP
.BR ABX_SANDBOX_API_URL ", " ABX_SANDBOX_API_KEY
The daemon to talk to and its key, instead of the local daemon
.RB ( http:// " or " https:// ).
.TP
.B ABX_TEMPLATES_DIR
Built templates and their layers (default: <data dir>/templates).
.TP
.B ABX_TEMPLATE_SPECS
Template specs (default: ../share/abx/templates beside the abx binary).
.SH FILES
.TP
.I ~/.local/state/abx/daemon.log
The local daemon's log.
.TP
.I /var/lib/abx
The data directory of the system service (abx.service).
.TP
.I <prefix>/libexec/abx/abx\-init
The first process of every sandbox.
.SH SEE ALSO
.BR docker (1),
and the README of the source tree.
)";

}  // namespace abx::cli
