/*
 * A network transfer of a known size, for `tracelens io`'s network tables (crates/cli/tests/
 * record_net.rs): in a network namespace of its own (no other traffic), the loopback
 * interface renamed IFNAME and brought up, COUNT UDP datagrams of SIZE bytes sent from one
 * socket to another on 127.0.0.1, each received before the next is sent.
 *
 * Usage: net_transfer IFNAME COUNT SIZE. Prints `pid=P sent=BYTES received=BYTES` (payload
 * bytes). Exits 77 when it cannot make its namespace (not root, or namespaces not allowed).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int fail(const char *what)
{
	fprintf(stderr, "net_transfer: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: net_transfer IFNAME COUNT SIZE\n");
		return 2;
	}
	const char *ifname = argv[1];
	long count = atol(argv[2]), size = atol(argv[3]);
	if (unshare(CLONE_NEWNET) != 0) {
		fprintf(stderr, "net_transfer: unshare(CLONE_NEWNET): %s\n", strerror(errno));
		return 77;
	}
	int ctl = socket(AF_INET, SOCK_DGRAM, 0);
	if (ctl < 0)
		return fail("socket");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
	strncpy(ifr.ifr_newname, ifname, IFNAMSIZ - 1);
	if (ioctl(ctl, SIOCSIFNAME, &ifr) != 0)
		return fail("rename lo");
	memset(&ifr, 0, sizeof ifr);
	strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
	if (ioctl(ctl, SIOCGIFFLAGS, &ifr) != 0)
		return fail("get flags");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(ctl, SIOCSIFFLAGS, &ifr) != 0)
		return fail("bring up");
	close(ctl);

	int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
	if (rx < 0 || tx < 0)
		return fail("socket");
	struct sockaddr_in addr;
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof addr;
	if (bind(rx, (struct sockaddr *)&addr, sizeof addr) != 0 || getsockname(rx, (struct sockaddr *)&addr, &len) != 0)
		return fail("bind");
	char *buf = calloc(1, size), *in = malloc(size + 1);
	long sent = 0, received = 0;
	for (long i = 0; i < count; i++) {
		ssize_t n = sendto(tx, buf, size, 0, (struct sockaddr *)&addr, sizeof addr);
		if (n != size)
			return fail("sendto");
		sent += n;
		n = recv(rx, in, size + 1, 0);
		if (n != size)
			return fail("recv");
		received += n;
	}
	printf("pid=%d sent=%ld received=%ld\n", getpid(), sent, received);
	return 0;
}
