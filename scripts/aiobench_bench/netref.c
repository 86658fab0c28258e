/* The netbench section's plain reference: one TCP request/response loop on loopback.
 *
 * netref TOTAL BLOCK RESP: a server process (forked) answers every BLOCK bytes received
 * (the last block short) with RESP bytes; the client sends TOTAL bytes in blocks, each
 * after the answer to the one before. Prints "<elapsed_ns> <blocks> <bytes_sent>
 * <bytes_received>" of the client's loop (connect excluded), as aiobench times its own.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void io(int fd, char *buf, long long len, int out)
{
    while (len > 0) {
        ssize_t n = out ? send(fd, buf, (size_t)len, MSG_NOSIGNAL) : recv(fd, buf, (size_t)len, 0);
        if (n <= 0) {
            perror(out ? "send" : "recv");
            exit(1);
        }
        len -= n;
    }
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    long long total = atoll(argv[1]), bs = atoll(argv[2]), resp = atoll(argv[3]);
    char *buf = calloc(1, (size_t)(bs > resp ? bs : resp));
    int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof addr;
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) || listen(lfd, 1) ||
        getsockname(lfd, (struct sockaddr *)&addr, &alen))
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = accept(lfd, NULL, NULL);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        for (long long got = 0; got < total;) {
            long long len = total - got < bs ? total - got : bs;
            io(fd, buf, len, 0);
            got += len;
            io(fd, buf, resp, 1);
        }
        _exit(0);
    }
    close(lfd);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr))
        return 1;
    struct timespec a, b;
    long long sent = 0, received = 0, blocks = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    while (sent < total) {
        long long len = total - sent < bs ? total - sent : bs;
        io(fd, buf, len, 1);
        sent += len;
        io(fd, buf, resp, 0);
        received += resp;
        blocks++;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    close(fd);
    waitpid(pid, NULL, 0);
    printf("%lld %lld %lld %lld\n", (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec),
           blocks, sent, received);
    return 0;
}
