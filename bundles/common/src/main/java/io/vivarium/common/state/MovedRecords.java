package io.vivarium.common.state;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;

import io.vivarium.common.files.AtomicFiles;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The mark a state directory keeps once its records were imported into another store: the file
 * store then refuses to open (its records are stale), until an export brings them back and clears
 * the mark. Written after the import committed; an import finds the mark missing after a crash
 * between the two and writes it again.
 */
public final class MovedRecords {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path file;

    private MovedRecords(Path file) {
        this.file = file;
    }

    public static MovedRecords of(Path stateDir) {
        return new MovedRecords(stateDir.resolve(FileStateStore.DIR).resolve(FileStateStore.MOVED));
    }

    /** Marks the records as moved to {@code where} (a URL without its password). */
    public void mark(String where, int records) throws IOException {
        ObjectNode m = JSON.createObjectNode().put("to", where).put("records", records).put("at", Instant.now().toString());
        Files.createDirectories(file.getParent());
        AtomicFiles.write(file, JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(m));
    }

    public boolean marked() {
        return Files.isRegularFile(file);
    }

    public void clear() throws IOException {
        AtomicFiles.delete(file);
    }

    /** @throws IOException naming where the records went and how to bring them back, if they were moved */
    void refuseIfMoved() throws IOException {
        JsonNode m;
        try {
            m = JSON.readTree(Files.readAllBytes(file));
        } catch (NoSuchFileException notMoved) {
            return;
        }
        throw new IOException("the records of " + file.getParent().getParent() + " were moved to " + m.path("to").asText("?")
                + " on " + m.path("at").asText("?") + " (" + m.path("records").asText("?") + " records); start with the "
                + "state-postgres feature and that --state-url, or bring them back with `vivarium state export` (" + file
                + " marks the move)");
    }
}
