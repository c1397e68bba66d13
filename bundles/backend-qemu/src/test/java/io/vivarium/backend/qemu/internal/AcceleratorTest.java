package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AcceleratorTest {

    @TempDir
    Path dir;

    private Path cpuinfo(String flags) throws IOException {
        return Files.writeString(dir.resolve("cpuinfo"), "processor\t: 0\nflags\t\t: fpu " + flags + " sse2\n\n"
                + "processor\t: 1\nflags\t\t: fpu " + flags + " sse2\n");
    }

    @Test
    void withoutVmxOrSvmItIsTcgEvenIfKvmOpens() throws IOException {
        Path kvm = Files.createFile(dir.resolve("kvm"));
        Accelerator a = Accelerator.detect(cpuinfo("hypervisor pvm"), kvm);
        assertEquals("tcg", a.name());
        assertEquals(List.of("-accel", "tcg", "-cpu", "max"), a.args());
        assertTrue(a.reason().startsWith("tcg (the CPU flags show no vmx or svm"), a.reason());
    }

    @Test
    void withVmxAndAKvmThatOpensItIsKvm() throws IOException {
        Path kvm = Files.createFile(dir.resolve("kvm"));
        Accelerator a = Accelerator.detect(cpuinfo("vmx ept"), kvm);
        assertEquals("kvm", a.name());
        assertEquals(List.of("-accel", "kvm", "-cpu", "host"), a.args());
        assertEquals("kvm (the CPU has vmx and " + kvm + " opens)", a.reason());
    }

    @Test
    void withSvmButNoKvmDeviceItIsTcgAndSaysWhy() throws IOException {
        Accelerator a = Accelerator.detect(cpuinfo("svm"), dir.resolve("missing"));
        assertEquals("tcg", a.name());
        assertTrue(a.reason().contains("the CPU has svm but " + dir.resolve("missing") + " does not open"), a.reason());
    }

    @Test
    void aFlagNamedLikeVmxIsNotVmx() throws IOException {
        assertEquals("tcg", Accelerator.detect(cpuinfo("vmx_ept_x"), Files.createFile(dir.resolve("kvm"))).name());
    }

    @Test
    void thisHostChoosesTcgWhenItsCpuHasNoHardwareVirtualisation() throws IOException {
        boolean hardware = Files.readString(Path.of("/proc/cpuinfo")).matches("(?s).*\\b(vmx|svm)\\b.*");
        Accelerator a = Accelerator.detect(Path.of("/proc/cpuinfo"), Path.of("/dev/kvm"));
        if (!hardware) {
            assertEquals("tcg", a.name(), a.reason());
        }
    }
}
