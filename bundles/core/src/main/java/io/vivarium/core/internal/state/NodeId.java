package io.vivarium.core.internal.state;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HexFormat;

import io.vivarium.common.files.AtomicFiles;

/** This node's id: made up on the first start and kept in the state directory, so it survives restarts. */
final class NodeId {
    private NodeId() {
    }

    static String readOrCreate(Path file) throws IOException {
        byte[] b = new byte[6];
        new SecureRandom().nextBytes(b);
        AtomicFiles.createIfAbsent(file, ("node-" + HexFormat.of().formatHex(b)).getBytes(StandardCharsets.UTF_8));
        String id = Files.readString(file, StandardCharsets.UTF_8).strip();
        return RecordCollection.checkKey(id);
    }
}
