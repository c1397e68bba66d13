package io.vivarium.guestagent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.SocketException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Smoke test of the guest images (image/build-image.sh): each variant is built (or found in the
 * cache), booted once under QEMU with the backend's command line (image/README.md), and its agent
 * answers guest-sync-delimited, guest-ping and a guest-exec of echo over virtio-serial; the
 * workspace is mounted at /work, and the python image runs python3. QMP quit then leaves no
 * process and no socket behind.
 */
@Timeout(value = 240, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class GuestImageBootTest {
    private static final String PORT = "org.qemu.guest_agent.0";
    private static final long BOOT_SECONDS = 90;

    @TempDir
    Path dir;
    Process qemu;
    SocketChannel agent;

    @AfterEach
    void stop() throws Exception {
        if (agent != null) {
            agent.close();
        }
        if (qemu != null && qemu.isAlive()) {
            qemu.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    static boolean onPath(String tool) {
        return Stream.of(System.getenv().getOrDefault("PATH", "").split(":"))
                .anyMatch(d -> !d.isEmpty() && Files.isExecutable(Path.of(d, tool)));
    }

    /** build-image.sh's answer: the image directory (built now, or the cached one). */
    static Path image(String variant) throws Exception {
        Process build = new ProcessBuilder(Path.of("image/build-image.sh").toAbsolutePath().toString(), "--variant", variant)
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(build.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertTrue(build.waitFor(180, TimeUnit.SECONDS), "build-image.sh did not finish within 180 s");
        assertEquals(0, build.exitValue(), "build-image.sh --variant " + variant + " failed (its messages are above)");
        Path image = Path.of(out);
        for (String f : List.of("kernel", "initramfs.cpio.gz", "workspace.qcow2", "image.json", "README")) {
            assertTrue(Files.isRegularFile(image.resolve(f)), "image " + image + " has no " + f);
        }
        return image;
    }

    @ParameterizedTest
    @ValueSource(strings = {"default", "qemu-ga", "python"})
    void bootsAndItsAgentAnswers(String variant) throws Exception {
        assumeTrue(onPath("qemu-system-x86_64") && onPath("qemu-img"),
                "qemu-system-x86_64 and qemu-img are not installed (apt-get install qemu-system-x86 qemu-utils)");
        Path image = image(variant);
        JsonNode meta = AgentConnection.JSON.readTree(image.resolve("image.json").toFile());
        assertEquals(variant, meta.path("variant").asText());
        assertEquals(PORT, meta.path("agent_port").asText());

        Path disk = dir.resolve("disk.qcow2");
        Process create = new ProcessBuilder("qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b",
                image.resolve("workspace.qcow2").toString(), disk.toString()).inheritIO().start();
        assertTrue(create.waitFor(30, TimeUnit.SECONDS) && create.exitValue() == 0, "qemu-img create failed");
        Path console = dir.resolve("console.log");
        Path agentSock = dir.resolve("agent.sock");
        Path qmpSock = dir.resolve("qmp.sock");
        qemu = new ProcessBuilder("qemu-system-x86_64", "-nodefaults", "-no-user-config", "-nographic", "-M", "q35",
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

        Lines replies = connectAndSync(agentSock, console);
        assertTrue(consoleShows(console, "vivarium: init ready"), () -> "agent answered, console:\n" + consoleText(console));

        call(replies, "guest-ping", null);
        long pid = call(replies, "guest-exec", Map.of("path", "/bin/echo", "arg", List.of("hello", variant),
                "capture-output", true)).path("pid").asLong();
        JsonNode status = execStatus(replies, pid);
        assertEquals(0, status.path("exitcode").asInt(), status::toString);
        assertEquals("hello " + variant + "\n", decode(status.path("out-data")));
        long cat = call(replies, "guest-exec", Map.of("path", "/bin/cat", "arg", List.of("/proc/mounts"),
                "capture-output", true)).path("pid").asLong();
        String mounts = decode(execStatus(replies, cat).path("out-data"));
        assertTrue(mounts.contains("/dev/vda /work ext4 "), () -> "the workspace is not mounted at /work:\n" + mounts);
        if (variant.equals("python")) {
            long py = call(replies, "guest-exec", Map.of("path", "/usr/bin/python3", "arg",
                    List.of("-c", "import sys, json, sqlite3, ssl; print(json.dumps(list(sys.version_info[:2])))"),
                    "capture-output", true)).path("pid").asLong();
            JsonNode ran = execStatus(replies, py);
            assertEquals("[3, 11]\n", decode(ran.path("out-data")), () -> "python3 in the guest: " + ran + " " + decode(ran.path("err-data")));
        }
        List<String> failures = consoleText(console).lines().filter(l -> l.contains("vivarium: ") && !l.endsWith("vivarium: init ready")).toList();
        assertEquals(List.of(), failures, "/init reported failures");

        quit(qmpSock);
        assertTrue(qemu.waitFor(20, TimeUnit.SECONDS), "QEMU still runs 20 s after QMP quit");
        assertEquals(0, qemu.exitValue(), "QEMU's exit status after quit");
        assertEquals(0, qemu.descendants().count(), "QEMU left processes behind");
        try (Stream<Path> left = Files.list(dir)) {
            assertEquals(List.of("console.log", "disk.qcow2"), left.map(p -> p.getFileName().toString()).sorted().toList(),
                    "QEMU left sockets behind");
        }
    }

    static String decode(JsonNode b64) {
        return new String(Base64.getDecoder().decode(b64.asText("")), StandardCharsets.UTF_8);
    }

    static String consoleText(Path console) {
        try {
            return Files.readString(console, StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            return "(no console: " + e + ")";
        }
    }

    /**
     * Whether the console shows the text within 10 s: /init prints its line after it started the
     * agent, and the emulated UART is slower than virtio-serial, so the agent may answer first.
     */
    static boolean consoleShows(Path console, String text) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!consoleText(console).contains(text)) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(50);
        }
        return true;
    }

    /** The lines the agent sends, read on a thread of their own so that waiting can time out. */
    static final class Lines {
        final BlockingQueue<String> queue = new LinkedBlockingQueue<>();
        final OutputStream out;

        Lines(SocketChannel ch) {
            out = Channels.newOutputStream(ch);
            InputStream in = Channels.newInputStream(ch);
            Thread reader = new Thread(() -> {
                ByteArrayOutputStream line = new ByteArrayOutputStream();
                try {
                    for (int b; (b = in.read()) >= 0; ) {
                        if (b == 0xFF) {
                            line.reset(); // guest-sync-delimited: whatever came before is stale
                        } else if (b == '\n') {
                            queue.add(line.toString(StandardCharsets.UTF_8));
                            line.reset();
                        } else {
                            line.write(b);
                        }
                    }
                } catch (IOException closed) {
                    // the test closed the channel
                }
            }, "agent-reader");
            reader.setDaemon(true);
            reader.start();
        }

        void send(String execute, Map<String, ?> arguments) throws IOException {
            var req = AgentConnection.JSON.createObjectNode().put("execute", execute);
            if (arguments != null) {
                req.set("arguments", AgentConnection.JSON.valueToTree(arguments));
            }
            out.write((AgentConnection.JSON.writeValueAsString(req) + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
        }
    }

    /**
     * Connects to the agent's chardev and repeats guest-sync-delimited (a fresh id every 500 ms)
     * until the guest's agent answers the latest; earlier answers are skipped.
     */
    Lines connectAndSync(Path sock, Path console) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOOT_SECONDS);
        while (agent == null) {
            assertTrue(qemu.isAlive(), () -> "QEMU exited with " + qemu.exitValue() + ", console:\n" + consoleText(console));
            SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            try {
                ch.connect(UnixDomainSocketAddress.of(sock));
                agent = ch;
            } catch (IOException notYet) {
                ch.close();
                assertTrue(System.nanoTime() < deadline, "QEMU did not create " + sock);
                AgentProcess.pause();
            }
        }
        Lines lines = new Lines(agent);
        for (long id = 1; ; id++) {
            long attempt = id;
            assertTrue(System.nanoTime() < deadline, () -> "no agent answer within " + BOOT_SECONDS + " s, console:\n" + consoleText(console));
            assertTrue(qemu.isAlive(), () -> "QEMU exited with " + qemu.exitValue() + ", console:\n" + consoleText(console));
            lines.send("guest-sync-delimited", Map.of("id", attempt));
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
            for (String line; (line = lines.queue.poll(until - System.nanoTime(), TimeUnit.NANOSECONDS)) != null; ) {
                if (AgentConnection.JSON.readTree(line).path("return").asLong(-1) == attempt) {
                    return lines;
                }
            }
        }
    }

    static JsonNode call(Lines lines, String execute, Map<String, ?> arguments) throws Exception {
        lines.send(execute, arguments);
        String line = lines.queue.poll(30, TimeUnit.SECONDS);
        assertNotNull(line, execute + ": no answer within 30 s");
        JsonNode r = AgentConnection.JSON.readTree(line);
        assertNotNull(r.get("return"), () -> execute + " failed: " + r);
        return r.get("return");
    }

    static JsonNode execStatus(Lines lines, long pid) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            JsonNode s = call(lines, "guest-exec-status", Map.of("pid", pid));
            if (s.path("exited").asBoolean()) {
                return s;
            }
            assertTrue(System.nanoTime() < deadline, "process " + pid + " did not exit within 30 s");
            AgentProcess.pause();
        }
    }

    /** QMP quit; QEMU closes the monitor as it exits. */
    static void quit(Path qmpSock) throws IOException {
        try (SocketChannel qmp = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            qmp.connect(UnixDomainSocketAddress.of(qmpSock));
            InputStream in = Channels.newInputStream(qmp);
            assertTrue(readLine(in).contains("\"QMP\""), "no QMP greeting");
            OutputStream out = Channels.newOutputStream(qmp);
            out.write("{\"execute\":\"qmp_capabilities\"}\n{\"execute\":\"quit\"}\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            try {
                while (!readLine(in).isEmpty()) {
                    // the capabilities answer, the quit answer and the SHUTDOWN event, then end of stream
                }
            } catch (SocketException reset) {
                // QEMU exited with unread input: the end of stream as well
            }
        }
    }

    static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int b; (b = in.read()) >= 0 && b != '\n'; ) {
            line.write(b);
        }
        return line.toString(StandardCharsets.UTF_8);
    }
}
