package io.vivarium.itests.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.vivarium.testkit.Bounded;

/**
 * A network namespace a test makes for one host of a fleet: a veth pair whose host end is
 * {@code 10.231.<n>.1/30} and whose namespace end is {@code 10.231.<n>.2/30}, loopback up, a route
 * to {@code 10.231.0.0/16} through the host end and no default route, and forwarding turned on for
 * the host end alone: the host (the master) reaches it, it reaches the host and the other
 * namespaces (a node fetches an image from another), and nothing else, so no traffic of the test
 * can leave the machine. Deleting the namespace deletes the pair.
 */
final class NetNamespace implements AutoCloseable {
    static final String MISSING = "needs root and iproute2's ip (apt-get install iproute2) to make network namespaces";

    private static final String IP = "/usr/sbin/ip";

    private final String name;
    private final int n;

    private NetNamespace(String name, int n) {
        this.name = name;
        this.n = n;
    }

    static boolean available() {
        return Host.isRoot() && Files.isExecutable(Path.of(IP));
    }

    /** Namespace {@code n} (1 to 250) of this test JVM; a leftover of the same name from a killed run is replaced. */
    static NetNamespace create(int n) throws IOException {
        String name = "vvf" + ProcessHandle.current().pid() % 100000 + "n" + n;
        String host = "vvh" + ProcessHandle.current().pid() % 100000 + "n" + n;
        NetNamespace ns = new NetNamespace(name, n);
        ip(false, "netns", "del", name);
        ip(true, "netns", "add", name);
        try {
            ip(true, "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", name);
            ip(true, "addr", "add", ns.hostAddress() + "/30", "dev", host);
            ip(true, "link", "set", host, "up");
            ip(true, "-n", name, "addr", "add", ns.address() + "/30", "dev", "eth0");
            ip(true, "-n", name, "link", "set", "eth0", "up");
            ip(true, "-n", name, "link", "set", "lo", "up");
            ip(true, "-n", name, "route", "add", "10.231.0.0/16", "via", ns.hostAddress());
            Files.writeString(Path.of("/proc/sys/net/ipv4/conf", host, "forwarding"), "1\n");
        } catch (IOException e) {
            ns.close();
            throw e;
        }
        return ns;
    }

    /** The address of the namespace's end, where a daemon in it listens. */
    String address() {
        return "10.231." + n + ".2";
    }

    /** The host's end, which the namespace reaches the host (the master) by. */
    String hostAddress() {
        return "10.231." + n + ".1";
    }

    /**
     * The command prefix that runs a program inside this namespace: its network namespace only, not
     * {@code ip netns exec}, which also mounts a sysfs of the namespace over {@code /sys} and so hides
     * the cgroup hierarchy (runsc then cannot set up a container's cgroup).
     */
    List<String> exec() {
        return List.of("nsenter", "--net=/run/netns/" + name);
    }

    String name() {
        return name;
    }

    @Override
    public void close() throws IOException {
        ip(false, "netns", "del", name);
    }

    private static void ip(boolean mustWork, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(IP);
        cmd.addAll(List.of(args));
        Bounded.Ran ran = Bounded.run(Duration.ofSeconds(20), cmd.toArray(String[]::new));
        if (mustWork && ran.exitCode() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed (" + ran.exitCode() + "): " + ran.output());
        }
    }
}
