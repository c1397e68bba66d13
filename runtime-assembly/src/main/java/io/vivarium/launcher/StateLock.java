package io.vivarium.launcher;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The state directory's owner: one daemon at a time. Two daemons over one state directory would
 * each adopt, reap and rewrite the other's sandboxes, so the second one refuses to start. The lock
 * is the kernel's (a POSIX record lock on {@code daemon.lock}), so it goes with the process however
 * it ends, {@code kill -9} included, and a stale file never blocks a start. The file names the
 * holder's pid for the refusal's message only.
 */
final class StateLock {

    static final String FILE = "daemon.lock";

    private final FileChannel channel;
    private final FileLock lock;

    private StateLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    /**
     * Takes the lock of {@code stateDir} for this process's lifetime.
     *
     * @throws IllegalStateException naming the holder's pid if another process holds it
     */
    static StateLock acquire(Path stateDir) throws IOException {
        Path file = stateDir.resolve(FILE);
        FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE);
        FileLock lock;
        try {
            lock = channel.tryLock();
        } catch (OverlappingFileLockException e) {
            lock = null;
        }
        if (lock == null) {
            String holder = holder(channel);
            channel.close();
            throw new IllegalStateException("another daemon" + (holder.isEmpty() ? "" : " (pid " + holder + ")")
                    + " is using the state directory " + stateDir + ": stop it first, or start this one with "
                    + "another --state");
        }
        byte[] pid = (ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.US_ASCII);
        channel.truncate(0);
        channel.write(ByteBuffer.wrap(pid), 0);
        return new StateLock(channel, lock);
    }

    private static String holder(FileChannel channel) throws IOException {
        ByteBuffer buf = ByteBuffer.allocate(32);
        channel.read(buf, 0);
        String s = new String(buf.array(), 0, buf.position(), StandardCharsets.US_ASCII).strip();
        return s.matches("[0-9]{1,10}") ? s : "";
    }

    /** Lets the state directory go (tests; a daemon keeps it until it exits). */
    void release() throws IOException {
        lock.release();
        channel.close();
    }
}
