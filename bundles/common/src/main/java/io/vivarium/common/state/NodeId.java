package io.vivarium.common.state;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HexFormat;

import io.vivarium.api.state.RecordCollection;
import io.vivarium.common.files.AtomicFiles;

/** This node's id: made up on the first start and kept in the state directory, so it survives restarts. */
public final class NodeId {
    private NodeId() {
    }

    /** This node's id, kept in {@code <state>/store/node}; made up if there is none yet. */
    public static String readOrCreate(Path stateDir) throws IOException {
        Path file = Files.createDirectories(stateDir.resolve(FileStateStore.DIR)).resolve("node");
        byte[] b = new byte[6];
        new SecureRandom().nextBytes(b);
        AtomicFiles.createIfAbsent(file, ("node-" + HexFormat.of().formatHex(b)).getBytes(StandardCharsets.UTF_8));
        String id = Files.readString(file, StandardCharsets.UTF_8).strip();
        return RecordCollection.checkKey(id);
    }
}
