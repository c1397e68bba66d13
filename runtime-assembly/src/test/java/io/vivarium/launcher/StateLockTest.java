package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StateLockTest {

    @TempDir
    Path dir;

    @Test
    void theHolderWritesItsPidAndTheLockCanBeTakenAgainOnceReleased() throws Exception {
        StateLock lock = StateLock.acquire(dir);
        assertEquals(ProcessHandle.current().pid() + "\n", Files.readString(dir.resolve(StateLock.FILE)));
        assertThrows(IllegalStateException.class, () -> StateLock.acquire(dir), "not twice in one process either");
        lock.release();
        StateLock.acquire(dir).release();
    }

    @Test
    void anotherProcessHoldingItIsRefusedByPidAndItsDeathFreesTheDirectory() throws Exception {
        Path python = Path.of("/usr/bin/python3");
        Assumptions.assumeTrue(Files.isExecutable(python), "needs python3 to hold a POSIX lock from another process");
        String holdLock = "import fcntl, os, sys\n"
                + "f = open(sys.argv[1], 'a+')\n"
                + "fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
                + "f.truncate(0); f.write('%d\\n' % os.getpid()); f.flush()\n"
                + "print('held', flush=True)\n"
                + "sys.stdin.read()\n";
        Process holder = new ProcessBuilder(python.toString(), "-c", holdLock, dir.resolve(StateLock.FILE).toString())
                .redirectErrorStream(true).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
            assertEquals("held", out.readLine());
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> StateLock.acquire(dir));
            assertTrue(e.getMessage().contains("another daemon (pid " + holder.pid() + ") is using the state directory "
                    + dir), e.getMessage());
        } finally {
            holder.destroyForcibly(); // SIGKILL: the kernel drops its lock, the file stays
            assertTrue(holder.waitFor(10, TimeUnit.SECONDS));
        }
        assertTrue(Files.exists(dir.resolve(StateLock.FILE)));
        StateLock.acquire(dir).release();
    }
}
