package io.vivarium.kit.guest;

/** The contract against the stock qemu-ga over one held connection: one request at a time, the emulated exec's polls and kills sharing the stream. */
class QemuGaStreamContractTest extends LocalPeerContract {
    @Override
    PeerProcess startPeer() throws Exception {
        return StockQemuGa.start();
    }

    @Override
    boolean overOneStream() {
        return true;
    }

    @Override
    boolean extended() {
        return false;
    }
}
