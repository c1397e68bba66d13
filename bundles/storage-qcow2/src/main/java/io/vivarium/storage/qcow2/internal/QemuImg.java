package io.vivarium.storage.qcow2.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.vivarium.common.exec.HostCommand;

/**
 * The qemu-img calls of this strategy, each with a timeout, arguments never through a shell.
 * {@code -U} (force share) reads an image that a QEMU holds open: the caller of a store has paused
 * or quiesced that instance, as the SPI asks.
 */
final class QemuImg {

    /** What {@code qemu-img info} says of one image. */
    record Info(Path path, String format, Path backing, String backingFormat) {
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path executable;

    QemuImg(Path executable) {
        this.executable = executable;
    }

    Path executable() {
        return executable;
    }

    Info info(Path image, boolean forceShare, Duration timeout) throws IOException {
        List<String> argv = argv("info", "--output=json");
        if (forceShare) {
            argv.add("-U");
        }
        argv.add(image.toString());
        return parse(image, JSON.readTree(HostCommand.run(argv, timeout)));
    }

    /** The image and every backing file under it, top first; fails naming a backing file that cannot be opened. */
    List<Info> chain(Path image, Duration timeout) throws IOException {
        List<String> argv = argv("info", "--output=json", "--backing-chain", image.toString());
        JsonNode links = JSON.readTree(HostCommand.run(argv, timeout));
        List<Info> chain = new ArrayList<>();
        for (JsonNode link : links) {
            chain.add(parse(Path.of(link.path("filename").asText()), link));
        }
        return chain;
    }

    /** Checks a qcow2's metadata (refcounts, L1/L2 tables); throws with qemu-img's report. */
    void check(Path image, Duration timeout) throws IOException {
        HostCommand.run(argv("check", "-q", image.toString()), timeout);
    }

    /** An empty overlay at {@code target} whose backing file is {@code backing}. */
    void createOverlay(Info backing, Path target, Duration timeout) throws IOException {
        HostCommand.run(argv("create", "-q", "-f", "qcow2", "-F", backing.format(), "-b",
                backing.path().toAbsolutePath().toString(), target.toString()), timeout);
    }

    /**
     * A qcow2 at {@code target} with the content of {@code source}: given {@code backing}, an
     * overlay on it holding only the clusters that differ from it; else standalone.
     */
    void convert(Path source, boolean forceShare, Info backing, Path target, Duration timeout) throws IOException {
        List<String> argv = argv("convert", "-O", "qcow2");
        if (forceShare) {
            argv.add("-U");
        }
        if (backing != null) {
            argv.addAll(List.of("-B", backing.path().toAbsolutePath().toString(), "-F", backing.format()));
        }
        argv.addAll(List.of(source.toString(), target.toString()));
        HostCommand.run(argv, timeout);
    }

    private List<String> argv(String... args) {
        List<String> argv = new ArrayList<>();
        argv.add(executable.toString());
        argv.addAll(List.of(args));
        return argv;
    }

    private static Info parse(Path image, JsonNode node) throws IOException {
        String format = node.path("format").asText("");
        if (format.isEmpty()) {
            throw new IOException("qemu-img info of " + image + " names no format");
        }
        String backing = node.path("full-backing-filename").asText("");
        return new Info(image, format, backing.isEmpty() ? null : Path.of(backing),
                node.path("backing-filename-format").asText(null));
    }
}
