package io.vivarium.itests.e2e;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.SocketException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Boot to agent-ready of the guest images (guest-agent/image), side by side in one run, against
 * the bare kernel + initramfs reaching {@code /init} (the {@code bare} image: busybox and an
 * {@code /init} that prints a line and powers off) under the same QEMU command line (the backend's,
 * TCG, 256 MiB, 1 vCPU, with the workspace disk and the virtio-serial port). Rounds alternate bare,
 * default, qemu-ga. Measured from spawning QEMU: the console line of {@code /init} (the console file
 * polled every 2 ms, the same way for every image) and the first answer of the agent to
 * {@code guest-sync-delimited} (sent every 100 ms from the moment QEMU's socket exists). Our
 * overhead (modules, disk, agent start, channel) is default's first answer minus bare's
 * {@code /init}. Every image gets one untimed boot first.
 */
@ExtendWith(Bench.class)
class BootBenchmark {
    static final Goal OVERHEAD = Goal.atMost("boot to agent-ready over the bare kernel's `/init` (default image, p50)", 300,
            "ms", 8);
    static final int ROUNDS = 5;
    static final String PORT = "org.qemu.guest_agent.0";
    static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    /** One boot: ms from spawn to the /init line, to the first agent answer (NaN for bare), QEMU's VmRSS then (-1 for bare). */
    record Boot(double initMillis, double agentMillis, long rssKib) {}

    @Test
    void bootToAgentReadyAgainstBareInit(BenchReport report) throws Exception {
        Assumptions.assumeTrue(onPath("qemu-system-x86_64") && onPath("qemu-img"),
                "qemu-system-x86_64 and qemu-img are not installed (apt-get install qemu-system-x86 qemu-utils)");
        Map<String, Path> images = new LinkedHashMap<>();
        for (String variant : List.of("bare", "default", "qemu-ga")) {
            images.put(variant, image(variant));
        }
        Map<String, List<Boot>> boots = new LinkedHashMap<>();
        int n = 0;
        for (String variant : images.keySet()) {
            boot(images.get(variant), dir.resolve("warm-up-" + n++)); // page cache, QEMU's own files
            boots.put(variant, new ArrayList<>());
        }
        for (int round = 0; round < ROUNDS; round++) {
            for (String variant : images.keySet()) {
                boots.get(variant).add(boot(images.get(variant), dir.resolve(variant + "-" + round)));
            }
        }

        double bare = p50(boots.get("bare"), Boot::initMillis);
        Table table = new Table("image (p50 over " + ROUNDS + " boots)", "initramfs", "spawn to /init's line",
                "spawn to first agent answer", "over bare /init", "QEMU RSS then");
        for (String variant : images.keySet()) {
            List<Boot> b = boots.get(variant);
            double agent = p50(b, Boot::agentMillis);
            boolean isBare = variant.equals("bare");
            table.row(variant, Files.size(images.get(variant).resolve("initramfs.cpio.gz")) / 1024 + " KiB",
                    Math.round(p50(b, Boot::initMillis)) + " ms", isBare ? "—" : Math.round(agent) + " ms",
                    isBare ? "—" : String.format("%+.0f ms", agent - bare),
                    isBare ? "—" : Math.round(p50(b, x -> x.rssKib()) / 1024) + " MiB");
        }
        report.add(table);
        report.add(String.format("default's agent-ready / bare /init = %.2f×; every boot (ms, /init line / agent answer): %s",
                p50(boots.get("default"), Boot::agentMillis) / bare, all(boots)));
        report.check(OVERHEAD, p50(boots.get("default"), Boot::agentMillis) - bare);
    }

    static boolean onPath(String tool) {
        return Stream.of(System.getenv().getOrDefault("PATH", "").split(":"))
                .anyMatch(d -> !d.isEmpty() && Files.isExecutable(Path.of(d, tool)));
    }

    /** build-image.sh's answer for VARIANT (built now, or found in the cache). */
    static Path image(String variant) throws Exception {
        Path script = Path.of("..", "guest-agent", "image", "build-image.sh").toAbsolutePath().normalize();
        Process build = new ProcessBuilder(script.toString(), "--variant", variant).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(build.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (!build.waitFor(300, TimeUnit.SECONDS) || build.exitValue() != 0) {
            throw new AssertionError(script + " --variant " + variant + " failed (its messages are above)");
        }
        return Path.of(out);
    }

    private static Boot boot(Path image, Path run) throws Exception {
        Files.createDirectories(run);
        JsonNode meta = JSON.readTree(image.resolve("image.json").toFile());
        boolean hasAgent = !meta.path("agent").asText().equals("none");
        Path disk = run.resolve("disk.qcow2");
        Process create = new ProcessBuilder("qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b",
                image.resolve("workspace.qcow2").toString(), disk.toString()).inheritIO().start();
        if (!create.waitFor(30, TimeUnit.SECONDS) || create.exitValue() != 0) {
            throw new AssertionError("qemu-img create failed");
        }
        Path console = run.resolve("console.log");
        Path agentSock = run.resolve("agent.sock");
        Path qmpSock = run.resolve("qmp.sock");
        String marker = hasAgent ? "vivarium: init ready" : "vivarium: bare init reached";
        long spawn = System.nanoTime();
        Process qemu = new ProcessBuilder("qemu-system-x86_64", "-nodefaults", "-no-user-config", "-nographic", "-M", "q35",
                "-accel", "tcg", "-cpu", "max", "-m", "256", "-smp", "1",
                "-kernel", image.resolve("kernel").toString(), "-initrd", image.resolve("initramfs.cpio.gz").toString(),
                "-append", meta.path("cmdline").asText(), "-serial", "file:" + console,
                "-device", "virtio-serial-pci",
                "-chardev", "socket,path=" + agentSock + ",server=on,wait=off,id=agent",
                "-device", "virtserialport,chardev=agent,name=" + PORT,
                "-blockdev", "driver=qcow2,node-name=work,file.driver=file,file.filename=" + disk,
                "-device", "virtio-blk-pci,drive=work",
                "-qmp", "unix:" + qmpSock + ",server=on,wait=off", "-nic", "none")
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        SocketChannel agent = null;
        try {
            long deadline = spawn + TimeUnit.SECONDS.toNanos(120);
            double init = Double.NaN;
            double answered = Double.NaN;
            long nextSync = 0;
            long id = 0;
            ByteArrayOutputStream received = new ByteArrayOutputStream();
            while (Double.isNaN(init) || (hasAgent && Double.isNaN(answered))) {
                long now = System.nanoTime();
                if (now > deadline || !qemu.isAlive()) {
                    throw new AssertionError((qemu.isAlive() ? "no " + marker + " and agent answer within 120 s"
                            : "QEMU exited with " + qemu.exitValue()) + ", console:\n" + read(console));
                }
                if (Double.isNaN(init) && read(console).contains(marker)) {
                    init = millis(spawn, now);
                }
                if (hasAgent && agent == null && Files.exists(agentSock)) {
                    SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
                    try {
                        ch.connect(UnixDomainSocketAddress.of(agentSock));
                        ch.configureBlocking(false);
                        agent = ch;
                    } catch (IOException notListeningYet) {
                        ch.close();
                    }
                }
                if (agent != null && Double.isNaN(answered)) {
                    if (now >= nextSync) {
                        String sync = "{\"execute\":\"guest-sync-delimited\",\"arguments\":{\"id\":" + ++id + "}}\n";
                        agent.write(ByteBuffer.wrap(sync.getBytes(StandardCharsets.US_ASCII)));
                        nextSync = now + TimeUnit.MILLISECONDS.toNanos(100);
                    }
                    ByteBuffer buf = ByteBuffer.allocate(4096);
                    int got = agent.read(buf);
                    if (got > 0) {
                        received.write(buf.array(), 0, got);
                        if (received.toString(StandardCharsets.ISO_8859_1).contains("\"return\"")) {
                            answered = millis(spawn, System.nanoTime());
                        }
                    }
                }
                Thread.sleep(2);
            }
            long rss = hasAgent ? rssKib(qemu.pid()) : -1; // bare is powering off already
            if (hasAgent) {
                quit(qmpSock);
            }
            // bare powers off by itself
            if (!qemu.waitFor(30, TimeUnit.SECONDS)) {
                throw new AssertionError("QEMU did not exit within 30 s after " + (hasAgent ? "QMP quit" : "poweroff"));
            }
            return new Boot(init, answered, rss);
        } finally {
            if (agent != null) {
                agent.close();
            }
            if (qemu.isAlive()) {
                qemu.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    private static double millis(long from, long to) {
        return (to - from) / 1e6;
    }

    private static String read(Path console) throws IOException {
        return Files.exists(console) ? Files.readString(console, StandardCharsets.ISO_8859_1) : "";
    }

    private static long rssKib(long pid) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("\\D", ""));
            }
        }
        return -1;
    }

    /** QMP quit; QEMU closes the monitor as it exits. */
    private static void quit(Path qmpSock) throws IOException {
        try (SocketChannel qmp = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            qmp.connect(UnixDomainSocketAddress.of(qmpSock));
            InputStream in = Channels.newInputStream(qmp);
            OutputStream out = Channels.newOutputStream(qmp);
            out.write("{\"execute\":\"qmp_capabilities\"}\n{\"execute\":\"quit\"}\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            try {
                in.readAllBytes();
            } catch (SocketException reset) {
                // QEMU exited with unread input: the end of stream as well
            }
        }
    }

    private static double p50(List<Boot> boots, java.util.function.ToDoubleFunction<Boot> f) {
        return Stats.p50(boots.stream().map(f::applyAsDouble).toList());
    }

    private static String all(Map<String, List<Boot>> boots) {
        List<String> parts = new ArrayList<>();
        boots.forEach((variant, b) -> parts.add(variant + " " + b.stream()
                .map(x -> String.format("%.0f/%s", x.initMillis(), Double.isNaN(x.agentMillis()) ? "—" : String.format("%.0f", x.agentMillis())))
                .toList()));
        return String.join(", ", parts);
    }
}
