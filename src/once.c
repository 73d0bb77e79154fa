/* once.c: placeholder until sqf_once lands. */
typedef int sqf_once_placeholder_;
