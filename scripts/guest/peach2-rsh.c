// SPDX-License-Identifier: GPL-2.0
/*
 * peach2-rsh: run a command on another node of the cluster over the management network,
 * the way MPI launchers use ssh (Open MPI's plm_rsh_agent, MPICH's -launcher-exec).
 *
 *   peach2-rsh [-l user] [-n] [-p port] [ssh options -x -T -q -t -o opt: ignored] host cmd...
 *   peach2-rsh --server --listen ADDR --allow NET/BITS [--port N] [--log FILE]
 *
 * Client: the command words are joined with spaces and run by the remote user's login shell
 * (`$SHELL -c`), like ssh. Its stdout and stderr arrive separately, stdin is forwarded (-n:
 * none), and peach2-rsh exits with the remote command's status (128+N if a signal N ended
 * it, 255 if the connection failed). If the connection drops, the server hangs up the
 * command's process group (SIGHUP, then SIGKILL).
 *
 * What the server trusts (the rsh model of trusted hosts, for one private cluster):
 *  - It listens only on the management network's address of its node, and accepts
 *    connections only from addresses inside that network (--allow): the management network
 *    is a virtual segment between the cluster's guests and nothing else (scripts/mgmtnet.py).
 *  - The client connects from a privileged source port (< 1024), which only root can bind
 *    on a node: this program is installed setuid root, binds the port, then drops root for
 *    good before it does anything else. So a connection from a privileged port was made by
 *    this program or by root, and the caller's user name it sends is believed.
 *  - A caller may run commands as itself; root may run them as any user. Nobody else may
 *    become another user. Root on any node is therefore root on every node (as with ssh
 *    keys shared across a cluster).
 * Anything that breaks those assumptions (a root shell on a node, another host joined to
 * the segment) can run anything on every node.
 *
 * Wire format: the client sends the header "PEACH2-RSH 1\n<caller>\n<user>\n<cmd length>\n"
 * and the command bytes, then frames (type byte, 32-bit big-endian length, payload):
 * client->server 'i' stdin (length 0: end of input); server->client 'o' stdout, 'e'
 * stderr, 'x' exit status (4 bytes), 'E' refusal message (then the server closes).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RSH_PORT 514            /* "shell" in /etc/services: the port rshd used */
#define RSH_MAGIC "PEACH2-RSH 1"
#define MAX_CMD (1 << 20)
#define MAX_FRAME (64 * 1024)
#define CONNECT_TIMEOUT_S 10
#define HEADER_TIMEOUT_S 10
#define ENV_FILE "/etc/peach2/environment"
#define EXIT_CONN 255

static const char *prog = "peach2-rsh";

__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_CONN);
}

/* ------------------------------------------------------------------ I/O helpers */

/* All of len bytes, or -1 (error, or end of file while reading). */
static int io_all(int fd, char *p, size_t len, int writing)
{
	while (len) {
		ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	return io_all(fd, (char *)buf, len, 1);
}

static int read_all(int fd, void *buf, size_t len)
{
	return io_all(fd, buf, len, 0);
}

static int send_frame(int fd, char type, const void *data, uint32_t len)
{
	unsigned char hdr[5] = { (unsigned char)type, len >> 24, len >> 16, len >> 8, len };

	if (write_all(fd, hdr, sizeof(hdr)))
		return -1;
	return len ? write_all(fd, data, len) : 0;
}

/* Reads one frame into buf (MAX_FRAME bytes); returns its length, -1 on EOF/error. */
static long recv_frame(int fd, char *type, char *buf)
{
	unsigned char hdr[5];
	uint32_t len;

	if (read_all(fd, hdr, sizeof(hdr)))
		return -1;
	len = (uint32_t)hdr[1] << 24 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 8 | hdr[4];
	if (len > MAX_FRAME)
		return -1;
	*type = (char)hdr[0];
	if (len && read_all(fd, buf, len))
		return -1;
	return (long)len;
}

/* One header line (without '\n') of at most cap-1 bytes. */
static int read_line(int fd, char *buf, size_t cap)
{
	size_t n = 0;

	while (n + 1 < cap) {
		if (read_all(fd, buf + n, 1))
			return -1;
		if (buf[n] == '\n') {
			buf[n] = '\0';
			return 0;
		}
		n++;
	}
	return -1;
}

static void keepalive(int fd)
{
	int on = 1, idle = 30, intvl = 10, cnt = 9;

	/*
	 * A peer that powers off is noticed within ~2 min instead of never. Not sooner: a
	 * session sits idle while its command runs, and the management network drops
	 * frames when a node's queue is full (MPI over TCP saturates it for minutes), so
	 * a few probes in a row can be lost with both ends alive (3 probes 5 s apart are
	 * the suspect for a session lost in such a run: docs/notes.md, seventeenth
	 * session).
	 */
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

/* ------------------------------------------------------------------ server */

static FILE *logf;
static time_t log_window;
static int log_count;

/* Refusals are logged, at most 10 per 10 s (a flood of bad connections stays cheap). */
static void logmsg(const char *fmt, ...)
{
	time_t now = time(NULL);
	va_list ap;

	if (!logf)
		return;
	if (now - log_window >= 10) {
		log_window = now;
		log_count = 0;
	}
	if (++log_count > 10)
		return;
	fprintf(logf, "%ld %s: ", (long)now, prog);
	va_start(ap, fmt);
	vfprintf(logf, fmt, ap);
	va_end(ap);
	fputc('\n', logf);
	fflush(logf);
}

__attribute__((noreturn))
static void refuse(int fd, const char *peer, const char *why)
{
	struct timeval tv = { .tv_sec = 1 };
	char sink[4096];
	size_t drained = 0;
	ssize_t n;

	logmsg("refused %s: %s", peer, why);
	send_frame(fd, 'E', why, (uint32_t)strlen(why));
	/* Read what the client already sent: closing with unread data would reset the
	 * connection, and the client might never see why. */
	shutdown(fd, SHUT_WR);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (drained < (1u << 20) && (n = read(fd, sink, sizeof(sink))) > 0)
		drained += (size_t)n;
	_exit(1);
}

/* The environment of a remote command: login basics plus ENV_FILE's KEY=VALUE lines. */
static char **command_env(const struct passwd *pw)
{
	static char *env[64];
	static char buf[8][512];
	static char line[1024];
	int n = 0;
	FILE *f;

	snprintf(buf[0], sizeof(buf[0]), "HOME=%s", pw->pw_dir);
	snprintf(buf[1], sizeof(buf[1]), "USER=%s", pw->pw_name);
	snprintf(buf[2], sizeof(buf[2]), "LOGNAME=%s", pw->pw_name);
	snprintf(buf[3], sizeof(buf[3]), "SHELL=%s", pw->pw_shell);
	snprintf(buf[4], sizeof(buf[4]), "PATH=%s", pw->pw_uid ?
		 "/usr/local/bin:/usr/bin:/bin" :
		 "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	for (; n < 5; n++)
		env[n] = buf[n];
	f = fopen(ENV_FILE, "r");
	while (f && n < 63 && fgets(line, sizeof(line), f)) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (line[0] == '#' || !strchr(line, '=') || line[0] == '=')
			continue;
		/* root-only settings (Open MPI's run-as-root consent) are marked "root:" */
		if (!strncmp(line, "root:", 5)) {
			if (pw->pw_uid)
				continue;
			env[n++] = strdup(line + 5);
		} else {
			env[n++] = strdup(line);
		}
	}
	if (f)
		fclose(f);
	env[n] = NULL;
	return env;
}

static void run_session(int fd, const char *peer)
{
	char caller[64], user[64], lenbuf[32], *cmd, *end, type;
	static char buf[MAX_FRAME];
	struct passwd *pw;
	int in[2], out[2], err[2], status;
	unsigned long len;
	pid_t pid;

	alarm(HEADER_TIMEOUT_S);
	if (read_line(fd, buf, 64) || strcmp(buf, RSH_MAGIC))
		refuse(fd, peer, "not a peach2-rsh client (bad header)");
	if (read_line(fd, caller, sizeof(caller)) || read_line(fd, user, sizeof(user)) ||
	    read_line(fd, lenbuf, sizeof(lenbuf)))
		refuse(fd, peer, "truncated header");
	errno = 0;
	len = strtoul(lenbuf, &end, 10);
	if (errno || *end || len == 0 || len > MAX_CMD)
		refuse(fd, peer, "bad command length (interactive sessions are not supported)");
	cmd = malloc(len + 1);
	if (!cmd || read_all(fd, cmd, len))
		refuse(fd, peer, "truncated command");
	cmd[len] = '\0';
	alarm(0);
	if (strcmp(caller, user) && strcmp(caller, "root"))
		refuse(fd, peer, "only root may run commands as another user");
	pw = getpwnam(user);
	if (!pw)
		refuse(fd, peer, "no such user on this node");
	if (pipe(in) || pipe(out) || pipe(err))
		refuse(fd, peer, "out of file descriptors");
	signal(SIGCHLD, SIG_DFL);
	pid = fork();
	if (pid < 0)
		refuse(fd, peer, "cannot fork");
	if (pid == 0) {
		const char *shell = pw->pw_shell && *pw->pw_shell ? pw->pw_shell : "/bin/sh";

		setsid();
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		for (int i = 3; i < 1024; i++)
			close(i);
		if (initgroups(pw->pw_name, pw->pw_gid) || setgid(pw->pw_gid) ||
		    setuid(pw->pw_uid)) {
			perror("peach2-rsh: cannot become the user");
			_exit(126);
		}
		if (chdir(pw->pw_dir))
			(void)chdir("/");
		signal(SIGPIPE, SIG_DFL);
		execle(shell, shell, "-c", cmd, (char *)NULL, command_env(pw));
		perror("peach2-rsh: exec of the user's shell failed");
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	logmsg("%s: %s as %s: %.200s", peer, caller, user, cmd);

	struct pollfd p[3] = { { fd, POLLIN, 0 }, { out[0], POLLIN, 0 }, { err[0], POLLIN, 0 } };
	int open_out = 2, stdin_open = 1;

	while (open_out) {
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents) {
			long n = recv_frame(fd, &type, buf);

			if (n < 0) { /* the client is gone: hang up the command */
				kill(-pid, SIGHUP);
				kill(-pid, SIGCONT);
				usleep(200 * 1000);
				kill(-pid, SIGKILL);
				waitpid(pid, NULL, 0);
				_exit(1);
			}
			if (type == 'i' && stdin_open) {
				if (n == 0 || write_all(in[1], buf, (size_t)n)) {
					close(in[1]);
					stdin_open = 0;
				}
			}
		}
		for (int k = 1; k < 3; k++) {
			if (p[k].fd < 0 || !p[k].revents)
				continue;
			ssize_t n = read(p[k].fd, buf, sizeof(buf));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(p[k].fd);
				p[k].fd = -1;
				open_out--;
			} else if (send_frame(fd, k == 1 ? 'o' : 'e', buf, (uint32_t)n)) {
				kill(-pid, SIGHUP);
				kill(-pid, SIGKILL);
				_exit(1);
			}
		}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	uint32_t rc = WIFEXITED(status) ? (uint32_t)WEXITSTATUS(status) :
		      128 + (uint32_t)WTERMSIG(status);
	unsigned char be[4] = { rc >> 24, rc >> 16, rc >> 8, rc };

	send_frame(fd, 'x', be, 4);
	_exit(0);
}

__attribute__((noreturn))
static void server(const char *listen_addr, const char *allow, int port, const char *logpath)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct in_addr net;
	char netstr[32], *slash;
	int bits, fd, on = 1;
	uint32_t mask;

	if (!listen_addr || !allow)
		die("--server needs --listen ADDR and --allow NET/BITS");
	if (inet_pton(AF_INET, listen_addr, &sa.sin_addr) != 1)
		die("--listen %s: not an IPv4 address", listen_addr);
	snprintf(netstr, sizeof(netstr), "%s", allow);
	slash = strchr(netstr, '/');
	if (!slash || (bits = atoi(slash + 1)) < 1 || bits > 32)
		die("--allow %s: want NET/BITS, e.g. 10.32.0.0/24", allow);
	*slash = '\0';
	if (inet_pton(AF_INET, netstr, &net) != 1)
		die("--allow %s: not an IPv4 network", allow);
	mask = bits == 32 ? 0xffffffffu : ~(0xffffffffu >> bits);
	if (logpath) {
		logf = fopen(logpath, "a");
		if (!logf)
			die("cannot open the log %s: %s", logpath, strerror(errno));
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64))
		die("cannot listen on %s:%d: %s", listen_addr, port, strerror(errno));
	signal(SIGCHLD, SIG_IGN); /* sessions reap themselves */
	signal(SIGPIPE, SIG_IGN);
	logmsg("listening on %s:%d, accepting %s", listen_addr, port, allow);
	for (;;) {
		struct sockaddr_in peer;
		socklen_t plen = sizeof(peer);
		char name[64];
		int c = accept4(fd, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC);

		if (c < 0)
			continue;
		snprintf(name, sizeof(name), "%s:%u", inet_ntoa(peer.sin_addr),
			 ntohs(peer.sin_port));
		pid_t pid = fork();

		if (pid == 0) {
			close(fd);
			keepalive(c);
			if ((ntohl(peer.sin_addr.s_addr) & mask) != (ntohl(net.s_addr) & mask))
				refuse(c, name, "not on the management network");
			if (ntohs(peer.sin_port) >= 1024)
				refuse(c, name, "not from a privileged port (use peach2-rsh, "
				       "which is setuid root)");
			run_session(c, name);
		}
		close(c);
	}
}

/* ------------------------------------------------------------------ client */

/*
 * A socket bound to a free privileged port, the one thing root is needed for. Without
 * SO_REUSEADDR, bind() refuses a port that any socket still holds (TIME_WAIT included), so
 * the connection cannot collide with an earlier one.
 */
static int privileged_socket(void)
{
	for (int port = 1023; port >= 512; port--) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			die("socket: %s", strerror(errno));
		if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return fd;
		int e = errno;

		close(fd);
		if (e == EACCES || e == EPERM)
			die("cannot bind a privileged port: peach2-rsh must be setuid root "
			    "(the server trusts only privileged ports)");
	}
	die("no free privileged port (512-1023)");
}

static void connect_to(int fd, const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	int fl = fcntl(fd, F_GETFL), err = 0, rc;
	socklen_t elen = sizeof(err);
	struct pollfd p = { fd, POLLOUT, 0 };
	char ps[16];

	snprintf(ps, sizeof(ps), "%d", port);
	rc = getaddrinfo(host, ps, &hints, &ai);
	if (rc)
		die("%s: %s", host, gai_strerror(rc));
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
		err = errno;
	freeaddrinfo(ai);
	if (!err) {
		rc = poll(&p, 1, CONNECT_TIMEOUT_S * 1000);
		if (rc == 0)
			die("connect to %s:%d: no answer in %d s", host, port, CONNECT_TIMEOUT_S);
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
	}
	if (err)
		die("connect to %s:%d: %s (is the node up, is peach2-rsh --server running?)",
		    host, port, strerror(err));
	fcntl(fd, F_SETFL, fl);
	keepalive(fd);
}

static void usage(void)
{
	fprintf(stderr, "usage: %s [-l user] [-n] [-p port] host command...\n"
		"       %s --server --listen ADDR --allow NET/BITS [--port N] [--log FILE]\n",
		prog, prog);
	exit(EXIT_CONN);
}

static int client(int argc, char **argv)
{
	const char *user = NULL, *host;
	int port = RSH_PORT, no_stdin = 0, opt, fd;
	static char buf[MAX_FRAME];
	char type, *cmd;
	size_t len = 0;

	/* ssh's options that launchers pass (-x no X11, -T no tty, -q quiet, -o ...) are
	 * accepted and mean nothing here. '+': stop at the host name. */
	while ((opt = getopt(argc, argv, "+l:np:xXTtqo:")) != -1) {
		switch (opt) {
		case 'l': user = optarg; break;
		case 'n': no_stdin = 1; break;
		case 'p': port = atoi(optarg); break;
		case 'x': case 'X': case 'T': case 't': case 'q': case 'o': break;
		default: usage();
		}
	}
	if (optind + 2 > argc)
		usage();
	host = argv[optind++];
	if (port <= 0 || port > 65535)
		die("bad port");
	fd = privileged_socket();
	/* Root was needed for the privileged port only: drop it before anything else. */
	if (setgid(getgid()) || setuid(getuid()) || (getuid() && !setuid(0)))
		die("cannot drop privileges");
	connect_to(fd, host, port);
	struct passwd *me = getpwuid(getuid());

	if (!me)
		die("who am I? uid %u is not in /etc/passwd", (unsigned)getuid());
	char caller[64];

	snprintf(caller, sizeof(caller), "%s", me->pw_name);
	if (!user)
		user = caller;
	for (int i = optind; i < argc; i++)
		len += strlen(argv[i]) + 1;
	cmd = malloc(len);
	if (!cmd || len > MAX_CMD)
		die("command too long");
	cmd[0] = '\0';
	for (int i = optind; i < argc; i++) {
		strcat(cmd, argv[i]);
		if (i + 1 < argc)
			strcat(cmd, " ");
	}
	char hdr[256];
	int hl = snprintf(hdr, sizeof(hdr), "%s\n%s\n%s\n%zu\n", RSH_MAGIC, caller, user,
			  strlen(cmd));

	signal(SIGPIPE, SIG_IGN);
	if (hl >= (int)sizeof(hdr) || write_all(fd, hdr, (size_t)hl) ||
	    write_all(fd, cmd, strlen(cmd)))
		die("%s: connection lost while sending the command", host);
	if (no_stdin && send_frame(fd, 'i', NULL, 0))
		die("%s: connection lost", host);

	struct pollfd p[2] = { { fd, POLLIN, 0 }, { no_stdin ? -1 : 0, POLLIN, 0 } };

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		if (p[1].fd >= 0 && p[1].revents) {
			ssize_t n = read(0, buf, sizeof(buf));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				p[1].fd = -1;
				n = 0;
			}
			if (send_frame(fd, 'i', buf, (uint32_t)n))
				die("%s: connection lost", host);
		}
		if (!p[0].revents)
			continue;
		long n = recv_frame(fd, &type, buf);

		if (n < 0)
			die("%s: connection lost before the command ended", host);
		if (type == 'o')
			(void)write_all(1, buf, (size_t)n); /* stdout gone: keep draining */
		else if (type == 'e')
			(void)write_all(2, buf, (size_t)n);
		else if (type == 'x' && n == 4)
			return (unsigned char)buf[0] << 24 | (unsigned char)buf[1] << 16 |
			       (unsigned char)buf[2] << 8 | (unsigned char)buf[3];
		else if (type == 'E')
			die("%s refused: %.*s", host, (int)n, buf);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--server")) {
		static const struct option opts[] = {
			{ "server", no_argument, NULL, 's' },
			{ "listen", required_argument, NULL, 'L' },
			{ "allow", required_argument, NULL, 'a' },
			{ "port", required_argument, NULL, 'p' },
			{ "log", required_argument, NULL, 'g' },
			{ NULL, 0, NULL, 0 }
		};
		const char *listen_addr = NULL, *allow = NULL, *logpath = NULL;
		int port = RSH_PORT, o;

		prog = "peach2-rsh --server";
		while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
			switch (o) {
			case 's': break;
			case 'L': listen_addr = optarg; break;
			case 'a': allow = optarg; break;
			case 'p': port = atoi(optarg); break;
			case 'g': logpath = optarg; break;
			default: usage();
			}
		}
		server(listen_addr, allow, port, logpath);
	}
	return client(argc, argv);
}
