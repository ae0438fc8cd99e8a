/** Adapters between TensorSocket and DJL: a DJL dataset fed by a producer, and a producer fed by a DJL dataset. */
module io.tensorsocket.djl {
    requires transitive io.tensorsocket.core;
    requires transitive ai.djl.api;

    exports io.tensorsocket.djl;
}
