package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TokensTest {

    @TempDir
    Path dir;

    @Test
    void createsOneOperatorTokenPrivatelyBelowACommentOnTheRoles() throws Exception {
        Path f = dir.resolve("state/tokens");
        assertTrue(Tokens.createIfAbsent(f));
        String text = Files.readString(f, StandardCharsets.US_ASCII);
        List<String> tokens = text.lines().filter(l -> !l.startsWith("#")).toList();
        assertEquals(1, tokens.size(), text);
        assertTrue(tokens.get(0).matches("[0-9a-f]{64} default operator"), text);
        assertTrue(text.startsWith(Tokens.HEADER), text);
        for (String said : List.of("<token> <tenant> <role>", "user ", "admin ", "operator ",
                "Change 'admin' to 'operator' on the line of the token")) {
            assertTrue(text.contains(said), "the comment explains " + said);
        }
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)));
        try (Stream<Path> s = Files.list(f.getParent())) {
            assertEquals(1, s.count(), "no temp file left behind");
        }
    }

    @Test
    void keepsAnExistingFile() throws Exception {
        Path f = dir.resolve("tokens");
        Files.writeString(f, "abc default admin\n");
        assertFalse(Tokens.createIfAbsent(f));
        assertEquals("abc default admin\n", Files.readString(f));
    }

    @Test
    void tokensDiffer() throws Exception {
        Path a = dir.resolve("a");
        Path b = dir.resolve("b");
        Tokens.createIfAbsent(a);
        Tokens.createIfAbsent(b);
        assertNotEquals(Files.readString(a), Files.readString(b));
    }
}
