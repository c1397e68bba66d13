package io.vivarium.common.net;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.vivarium.api.ApiException;
import io.vivarium.api.NetworkPolicy;
import io.vivarium.common.net.NetworkEntry;

/**
 * The {@code egress} network of sandboxes (docs/network.md), for every backend whose sandboxes run
 * in a network namespace of the host: procbox's (bubblewrap's {@code --unshare-net}) and gVisor's
 * (a named one runsc's sandbox joins). For {@code egress} a veth pair joins the namespace to the
 * host: {@code eth0} inside with the second address of a /30 of {@value #POOL}, {@code vsb<12 hex
 * of the id's SHA-256>} outside with the first, which is its default route. The host forwards and
 * masquerades what it sends, filtered by the nftables table {@value #TABLE}: each sandbox's chain
 * accepts its resolver's port 53, drops its {@code deny} entries, accepts its {@code allow}
 * entries, and drops the rest, and before any of it the addresses no sandbox reaches unless an
 * allow entry names them (other sandboxes, loopback, link-local, multicast); nothing from a sandbox
 * reaches the host itself, and nothing new reaches a sandbox. A sandbox's interface goes with its
 * namespace; its chain goes at its delete, and any chain whose interface is gone (a daemon killed
 * in between) at the next start. A named namespace ({@link #namedNamespace}) keeps its interface
 * until it is removed ({@link #removeNamedNamespace}): its backend's destroy does that. An attach is three processes (one {@code nft}, one {@code ip} on
 * each side): each costs milliseconds.
 *
 * <p>Each backend embeds its own copy of this class and takes its addresses from a part of the
 * pool of its own ({@code blocks}), so that two backends never hand out the same /30; the table,
 * the chains and the protected range are shared.
 */
public final class SandboxNetworks {
    private static final System.Logger LOG = System.getLogger(SandboxNetworks.class.getName());
    public static final String TABLE = "vivarium";
    /** Every sandbox's addresses, whichever backend's. */
    public static final String POOL = "10.213.0.0/16";
    static final String PREFIX = "vsb";
    /** Where {@code ip netns} keeps a named namespace. */
    private static final Path NAMED = Path.of("/run/netns");
    private static final NetworkEntry POOL_ENTRY = NetworkEntry.parse(POOL);
    /** Never reached unless an allow entry names them: other sandboxes, loopback, link-local (metadata services), multicast. */
    private static final List<NetworkEntry> PROTECTED = List.of(POOL_ENTRY, NetworkEntry.parse("127.0.0.0/8"),
            NetworkEntry.parse("169.254.0.0/16"), NetworkEntry.parse("224.0.0.0/4"));
    private static final Pattern HOST_ADDRESS = Pattern.compile("^\\d+: (" + PREFIX + "[0-9a-f]{12})\\s+inet (\\S+)/30", Pattern.MULTILINE);
    private static final Pattern CHAIN = Pattern.compile("chain sb_([0-9a-f]{12})");
    private static final Pattern LINK = Pattern.compile("^\\d+: (" + PREFIX + "[0-9a-f]{12})[@:]", Pattern.MULTILINE);
    private static final long TOOL_SECONDS = 20;
    /** Whether this process's effective uid is 0: read once, a backend asks at every create. */
    private static final boolean RUNS_AS_ROOT = effectiveUidIsRoot();

    private final Path resolvConf;
    /** The part of {@link #POOL} this copy hands out. */
    private final NetworkEntry blocks;
    private boolean tableReady;
    /** The /30s sandbox interfaces hold (their network addresses); read from the host at the first attach. */
    private Set<Integer> usedBlocks;
    /** The resolver last written to {@link #resolvConf}. */
    private String resolverWritten;

    /**
     * A sandbox's network namespace, as {@code ip} names it ({@code ipName}: a pid, or a named
     * namespace's name) and as a path to join it by.
     */
    public record Namespace(String ipName, Path path) {
        /** The namespace process {@code pid} runs in. */
        public static Namespace ofProcess(long pid) {
            return new Namespace(Long.toString(pid), Path.of("/proc/" + pid + "/ns/net"));
        }
    }

    /**
     * @param dir a daemon-owned directory: its {@code resolv.conf} is every sandbox's {@code /etc/resolv.conf}
     * @param blocks the part of {@link #POOL} this backend's sandboxes take their /30s from, e.g. {@code 10.213.0.0/17}
     */
    public SandboxNetworks(Path dir, String blocks) {
        this(blocks, dir.resolve("resolv.conf"));
        try {
            Files.createDirectories(dir);
            if (!Files.exists(resolvConf)) {
                Files.writeString(resolvConf, "# no resolver configured (core's network_resolver)\n");
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot write " + resolvConf + ": " + e.getMessage(), e);
        }
    }

    /** For sandboxes that name their resolver themselves (a VM's guest): no {@code resolv.conf} on the host. */
    public SandboxNetworks(String blocks) {
        this(blocks, null);
    }

    private SandboxNetworks(String blocks, Path resolvConf) {
        this.blocks = NetworkEntry.parse(blocks);
        if (!POOL_ENTRY.covers(this.blocks)) {
            throw new IllegalArgumentException(blocks + " is not inside " + POOL);
        }
        this.resolvConf = resolvConf;
    }

    /** The file bound at {@code /etc/resolv.conf} in every sandbox (null for a copy made without one). */
    public Path resolvConf() {
        return resolvConf;
    }

    /** Whether this host can give sandboxes a network: root, {@code ip} and {@code nft}. */
    public static String unsupportedReason() {
        if (!RUNS_AS_ROOT) {
            return "the daemon does not run as root";
        }
        for (String tool : List.of("/usr/sbin/nft", "/usr/sbin/ip")) {
            if (!Files.isExecutable(Path.of(tool))) {
                return tool + " is missing (apt-get install nftables iproute2)";
            }
        }
        return null;
    }

    /** Whether this process's effective uid is 0 ({@code /proc/self/status}). */
    private static boolean effectiveUidIsRoot() {
        try {
            return Files.readAllLines(Path.of("/proc/self/status")).stream().filter(l -> l.startsWith("Uid:"))
                    .map(l -> l.split("\\s+")[2]).findFirst().orElse("").equals("0");
        } catch (IOException e) {
            return false;
        }
    }

    /** The name of the host's end of the sandbox's network: a veth's, or a VM's tap. */
    public static String interfaceOf(String sandboxId) {
        return PREFIX + hex(sandboxId);
    }

    /** 12 hex digits naming the sandbox's interface and chain: of its id's SHA-256 (any id; 15 characters at most in a name). */
    static String hex(String sandboxId) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(sandboxId.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 6);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    /**
     * The address of the sandbox's {@code eth0}, as the host's end of its pair says (the next
     * address of its /30), if it has a network; read from the kernel, no process started.
     */
    public static Optional<String> sandboxAddress(String sandboxId) {
        try {
            NetworkInterface outside = NetworkInterface.getByName(interfaceOf(sandboxId));
            if (outside == null) {
                return Optional.empty();
            }
            return outside.inetAddresses().filter(a -> a instanceof Inet4Address).findFirst()
                    .map(a -> NetworkEntry.parse(a.getHostAddress() + "/30").host(2));
        } catch (SocketException e) {
            return Optional.empty();
        }
    }

    /**
     * A sandbox's address as {@link #sandboxAddress} reads it, kept once read (a sandbox keeps its
     * address for life; reading it looks through every interface of the host).
     */
    public static final class KnownAddress {
        private final String sandboxId;
        /** Null before it was read, or while the sandbox has none. */
        private volatile String address;

        public KnownAddress(String sandboxId) {
            this.sandboxId = sandboxId;
        }

        public Optional<String> get() {
            String a = address;
            if (a == null) {
                a = sandboxAddress(sandboxId).orElse(null);
                address = a;
            }
            return Optional.ofNullable(a);
        }
    }

    /** Joins the sandbox's namespace {@code ns} to the host under {@code policy}. */
    public synchronized void attach(String sandboxId, Namespace ns, NetworkPolicy policy, String resolver) {
        String outside = interfaceOf(sandboxId);
        // one ip on each side (each process costs milliseconds); the pair is made with its inside
        // end already in the sandbox's namespace, as moving one there costs ~25 ms more
        NetworkEntry block = attach(sandboxId, policy, resolver,
                "link add eth0 netns " + ns.ipName() + " type veth peer name " + outside);
        try {
            ip(ns.path(), inside(Link.of(block)));
        } catch (IOException e) {
            detach(sandboxId);
            throw ApiException.internal("cannot give sandbox " + sandboxId + " its network: " + e.getMessage(), e);
        }
    }

    /**
     * Gives a VM's tap {@code vsb<hex>} on the host, under {@code policy}: a persistent tap (it
     * outlives the QEMU that opens it, through a stop and a cold spell, until {@link #detach}) with
     * the first address of the sandbox's /30, through which the guest, at the second, goes out. The
     * guest's side is the guest's to configure, as {@link #link} then says.
     */
    public synchronized void attachTap(String sandboxId, NetworkPolicy policy, String resolver) {
        attach(sandboxId, policy, resolver, "tuntap add dev " + interfaceOf(sandboxId) + " mode tap");
    }

    /**
     * What a sandbox configures on its side of the host's interface.
     *
     * @param address its address, with the prefix length ({@code 10.213.192.6/30})
     * @param gateway its default route: the host's end
     */
    public record Link(String address, String gateway) {
        static Link of(NetworkEntry block) {
            return new Link(block.host(2) + "/30", block.host(1));
        }
    }

    /**
     * The host's end {@code link} (an {@code ip} command that makes {@link #interfaceOf the
     * sandbox's interface}) with the first address of a free /30, up, then the sandbox's chain;
     * the /30.
     */
    private NetworkEntry attach(String sandboxId, NetworkPolicy policy, String resolver, String link) {
        String outside = interfaceOf(sandboxId);
        try {
            ensureTable();
            NetworkEntry block = freeBlock();
            if (resolvConf != null && resolver != null && !resolver.equals(resolverWritten)) {
                Files.writeString(resolvConf, "nameserver " + resolver + "\n", StandardOpenOption.TRUNCATE_EXISTING,
                        StandardOpenOption.WRITE); // in place: every sandbox binds this very file
                resolverWritten = resolver;
            }
            ip(null, link, "addr add " + block.host(1) + "/30 dev " + outside, "link set " + outside + " up");
            usedBlocks.add(block.network());
            // the chain after the interface: another backend's removeOrphans takes a chain without one for
            // a dead sandbox's, and until the chain is there the table drops what the interface sends
            nft(chain(hex(sandboxId), policy, resolver));
            return block;
        } catch (IOException e) {
            detach(sandboxId);
            throw ApiException.internal("cannot give sandbox " + sandboxId + " its network: " + e.getMessage(), e);
        }
    }

    /** The link of sandbox {@code sandboxId}, if the host has its interface (read from the host). */
    public static Optional<Link> link(String sandboxId) throws IOException {
        return Optional.ofNullable(hostAddress(interfaceOf(sandboxId))).map(a -> Link.of(NetworkEntry.parse(a + "/30")));
    }

    /**
     * Gives the sandbox's {@code eth0} in {@code ns} its address and default route again, as
     * {@link #attach} did, on its {@code link} ({@link #link}): gVisor's runsc takes them off the
     * interface into its own network stack at every start, and reads them from there at the next (a restore).
     */
    public static void readdress(Link link, Namespace ns) throws IOException {
        ip(ns.path(), inside(link));
    }

    /**
     * What {@code eth0} gets inside: the link's address, up, its default route through the host's
     * end; and loopback up (bubblewrap sets it up itself; a named namespace starts with it down, and
     * runsc's stack leaves out an interface that is down, loopback too).
     */
    private static String[] inside(Link link) {
        return new String[] {"link set lo up", "addr replace " + link.address() + " dev eth0", "link set eth0 up",
            "route replace default via " + link.gateway()};
    }

    /** The named namespace of sandbox {@code sandboxId} ({@code ip netns}), made unless it exists. */
    public static Namespace namedNamespace(String sandboxId) throws IOException {
        Namespace ns = named(sandboxId);
        if (!Files.exists(ns.path())) {
            run("ip", "netns", "add", ns.ipName());
        }
        return ns;
    }

    /** The named namespace of sandbox {@code sandboxId}, if {@link #namedNamespace} made it. */
    public static Optional<Namespace> existingNamedNamespace(String sandboxId) {
        Namespace ns = named(sandboxId);
        return Files.exists(ns.path()) ? Optional.of(ns) : Optional.empty();
    }

    /** Removes the named namespace of sandbox {@code sandboxId}, if there is one (its {@code eth0} goes with it). */
    public static void removeNamedNamespace(String sandboxId) throws IOException {
        if (Files.exists(named(sandboxId).path())) {
            run("ip", "netns", "delete", named(sandboxId).ipName());
        }
    }

    private static Namespace named(String sandboxId) {
        String name = PREFIX + hex(sandboxId);
        return new Namespace(name, NAMED.resolve(name));
    }

    /** Removes what {@link #attach} made for the sandbox, if anything; the interface goes with the namespace anyway. */
    public synchronized void detach(String sandboxId) {
        String h = hex(sandboxId);
        try {
            String address = hostAddress(PREFIX + h);
            if (address != null) {
                deleteLink(PREFIX + h);
                if (usedBlocks != null) {
                    usedBlocks.remove(NetworkEntry.parse(address + "/30").network());
                }
            }
            if (tableExists() && chains().contains(h)) {
                removeChain(h);
            }
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot remove the network of sandbox " + sandboxId + " (removed at the next start): "
                    + e.getMessage());
        }
    }

    /**
     * Deletes interface {@code name} of the host, which may be going by itself: a namespace deleted
     * takes its veth pair only once the kernel's clean-up gets to it, asynchronously.
     */
    private static void deleteLink(String name) throws IOException {
        try {
            run("ip", "link", "del", name);
        } catch (IOException e) {
            if (Files.exists(Path.of("/sys/class/net", name))) {
                throw e;
            }
        }
    }

    /** The address of the host's end {@code name}, or null when there is no such interface. */
    private static String hostAddress(String name) throws IOException {
        Matcher m = HOST_ADDRESS.matcher(run("ip", "-o", "-4", "addr", "show"));
        while (m.find()) {
            if (m.group(1).equals(name)) {
                return m.group(2);
            }
        }
        return null;
    }

    /** Runs {@code commands} as one {@code ip -batch}, on the host ({@code ns} null), or in the network namespace at {@code ns}. */
    private static void ip(Path ns, String... commands) throws IOException {
        String batch = String.join("\n", commands) + "\n";
        if (ns == null) {
            feed(batch, "ip", "-batch", "-");
        } else {
            feed(batch, "nsenter", "--net=" + ns, "ip", "-batch", "-");
        }
    }

    /** {@link #removeOrphans} where this host gives networks at all; what fails is logged, not thrown (a start goes on). */
    public void removeOrphansWhereSupported() {
        if (unsupportedReason() == null) {
            try {
                removeOrphans();
            } catch (IOException e) {
                LOG.log(Level.WARNING, "cannot remove the network rules of sandboxes that are gone: " + e.getMessage());
            }
        }
    }

    /** At start: the chains of sandboxes whose interface is gone (their namespace ended while no daemon ran). */
    synchronized void removeOrphans() throws IOException {
        if (!tableExists()) {
            return;
        }
        Set<String> links = links();
        for (String h : chains()) {
            if (!links.contains(PREFIX + h)) {
                removeChain(h);
            }
        }
    }

    /** A sandbox's entry in the dispatch map and its chain, in one transaction. */
    private static void removeChain(String h) throws IOException {
        nft("delete element inet " + TABLE + " sandboxes { \"" + PREFIX + h + "\" }\ndelete chain inet " + TABLE + " sb_" + h + "\n");
    }

    /** The table every sandbox's chain hangs off; forwarding on. Checked once: the daemon alone changes it. */
    private void ensureTable() throws IOException {
        if (tableReady) {
            return;
        }
        Files.writeString(Path.of("/proc/sys/net/ipv4/ip_forward"), "1");
        if (!tableExists()) {
            nft("table inet " + TABLE + " {\n"
                    + "  map sandboxes { type ifname : verdict; }\n"
                    + "  chain forwarding {\n"
                    + "    type filter hook forward priority -10; policy accept;\n"
                    + "    iifname \"" + PREFIX + "*\" iifname vmap @sandboxes\n"
                    + "    iifname \"" + PREFIX + "*\" drop\n"
                    + "    oifname \"" + PREFIX + "*\" ct state established,related accept\n"
                    + "    oifname \"" + PREFIX + "*\" drop\n"
                    + "  }\n"
                    + "  chain inbound {\n"
                    + "    type filter hook input priority -10; policy accept;\n"
                    + "    iifname \"" + PREFIX + "*\" ct state established,related accept\n"
                    + "    iifname \"" + PREFIX + "*\" drop\n"
                    + "  }\n"
                    + "  chain outbound {\n"
                    + "    type nat hook postrouting priority 100; policy accept;\n"
                    + "    ip saddr " + POOL + " oifname != \"" + PREFIX + "*\" masquerade\n"
                    + "  }\n"
                    + "}\n");
        }
        tableReady = true;
    }

    /** A sandbox's chain and its entry in the dispatch map, as one nft transaction. */
    static String chain(String h, NetworkPolicy policy, String resolver) {
        // flushed: a chain whose interface went without it (a VM's tap a host's reboot took) is made anew
        StringBuilder c = new StringBuilder("add chain inet " + TABLE + " sb_" + h + "\nflush chain inet " + TABLE + " sb_" + h
                + "\n");
        String rule = "add rule inet " + TABLE + " sb_" + h + " ";
        if (resolver != null) {
            c.append(rule).append("ip daddr ").append(resolver).append(" meta l4proto { tcp, udp } th dport 53 accept\n");
        }
        List<NetworkEntry> allow = policy.allow().stream().map(NetworkEntry::parse).toList();
        for (String d : policy.deny()) {
            c.append(rule).append(match(NetworkEntry.parse(d))).append(" drop\n");
        }
        List<NetworkEntry> later = new ArrayList<>();
        for (NetworkEntry a : allow) {
            if (PROTECTED.stream().anyMatch(p -> p.covers(a))) {
                c.append(rule).append(match(a)).append(" accept\n"); // named outright: before the protected ranges
            } else {
                later.add(a);
            }
        }
        for (NetworkEntry p : PROTECTED) {
            c.append(rule).append(match(p)).append(" drop\n");
        }
        for (NetworkEntry a : later) {
            c.append(rule).append(match(a)).append(" accept\n");
        }
        c.append(rule).append("drop\n");
        c.append("add element inet " + TABLE + " sandboxes { \"" + PREFIX + h + "\" : jump sb_" + h + " }\n");
        return c.toString();
    }

    private static String match(NetworkEntry e) {
        return "ip daddr " + e.cidr() + (e.port() == null ? "" : " meta l4proto { tcp, udp } th dport " + e.port());
    }

    /** The lowest /30 of {@link #blocks} no sandbox interface holds. */
    private NetworkEntry freeBlock() throws IOException {
        if (usedBlocks == null) {
            usedBlocks = new HashSet<>();
            Matcher m = HOST_ADDRESS.matcher(run("ip", "-o", "-4", "addr", "show"));
            while (m.find()) {
                usedBlocks.add(NetworkEntry.parse(m.group(2) + "/30").network());
            }
        }
        for (int block = blocks.network(); block < blocks.network() + (1 << (32 - blocks.prefix())); block += 4) {
            if (!usedBlocks.contains(block)) {
                return new NetworkEntry(block, 30, null);
            }
        }
        throw new IOException("every /30 of " + blocks.cidr() + " is taken");
    }

    private Set<String> links() throws IOException {
        Set<String> names = new HashSet<>();
        Matcher m = LINK.matcher(run("ip", "-o", "link", "show"));
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    private boolean tableExists() throws IOException {
        return run("nft", "list", "tables").contains("table inet " + TABLE);
    }

    private Set<String> chains() throws IOException {
        Set<String> hexes = new HashSet<>();
        Matcher m = CHAIN.matcher(run("nft", "list", "table", "inet", TABLE));
        while (m.find()) {
            hexes.add(m.group(1));
        }
        return hexes;
    }

    /** Applies {@code script} as one nftables transaction (all of it or nothing). */
    private static void nft(String script) throws IOException {
        feed(script, "nft", "-f", "-");
    }

    /** Runs a host tool (no shell); its output, or an IOException with it. */
    private static String run(String... argv) throws IOException {
        return feed(null, argv);
    }

    /** Runs a host tool (no shell) with {@code input} (or nothing) on its stdin; its output. */
    private static String feed(String input, String... argv) throws IOException {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        try (var stdin = p.getOutputStream()) {
            if (input != null) {
                stdin.write(input.getBytes(StandardCharsets.UTF_8));
            }
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(TOOL_SECONDS, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", argv) + " did not finish within " + TOOL_SECONDS + " s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while running " + argv[0], e);
        }
        if (p.exitValue() != 0) {
            throw new IOException(String.join(" ", argv) + " failed (exit status " + p.exitValue() + "): " + out.strip());
        }
        return out;
    }
}
