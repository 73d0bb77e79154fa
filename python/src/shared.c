/* shared.c: a primitive's state in shared memory, so that processes share
 * the primitive (module.h's "Placement" says how objects reach it).
 *
 * Three placements:
 *   - shared=True: a block the module allocates.  A block is a named POSIX
 *     shared-memory object (/dev/shm/squarefree-<pid>-<n>-<nonce>), one page
 *     mapped MAP_SHARED, cut into 64-byte-aligned states (one cache line or
 *     more each, so that two objects never share a line) and never reused
 *     within the block: an object's memory is its own while any process
 *     may use it;
 *   - shared=<memory>, offset=k: the caller's writable buffer (a
 *     multiprocessing SharedMemory, an mmap, anything with the buffer
 *     protocol), exported (a Py_buffer held) while the object lives;
 *   - attach: a state another process initialised in such memory, by
 *     Type.attach(memory, offset), or by name when a pickle arrives.
 *
 * Lifetime of the module's blocks.  The process that creates a block owns
 * its name: it unlinks it when the last of its objects there is freed, or
 * at exit (Py_AtExit) for the objects still alive then.  Every other
 * process (a child of fork, which inherits the mapping; one that mapped
 * the block by name to unpickle an object) only unmaps it when its own
 * last object there goes, and never unlinks it.  A child that unpickles an
 * object maps the block by name, so the creator must still hold an object
 * there at that moment (multiprocessing.Process keeps its arguments until
 * it is itself dropped); a mapping, once made, outlives the name.  Nothing
 * is left in /dev/shm once the creating process has exited normally,
 * whatever happened to its children; a creator killed by SIGKILL leaves its
 * blocks' names behind (shm_unlink them by hand: /dev/shm/squarefree-*).
 * The module's own blocks never go through multiprocessing's
 * resource_tracker (whose handling of SharedMemory in children varies with
 * the Python version): they are shm_open and mmap calls made here.
 *
 * Every function here runs with the GIL held: the registry needs no lock
 * of its own. */
#include "module.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BLOCK_SIZE 4096
#define SLOT_ALIGN 64

struct shm_block {
    struct shm_block *next; /* the registry: every block this process maps */
    char name[80];          /* "/squarefree-...", or the caller's SharedMemory's name */
    char *base;
    size_t size;
    size_t used;  /* the bytes allocated, in a block this process made */
    long refs;    /* this process's objects in it */
    long creator; /* the pid that made it (and unlinks it), or 0: mapped by name */
    int unlinked; /* the creator unlinked its name (at exit) */
};

static struct shm_block *blocks;  /* the registry */
static struct shm_block *current; /* the block new objects go to, made by this process */
static long my_pid;

long proc_id(void)
{
    return my_pid;
}

/* A child of fork: a new pid, and the parent's blocks are not its own to
 * allocate in (the parent allocates there) nor to unlink. */
static void shared_after_fork(void)
{
    my_pid = (long)getpid();
    current = NULL;
}

static void unlink_mine(void)
{
    for (struct shm_block *b = blocks; b; b = b->next)
        if (b->creator == my_pid && !b->unlinked) {
            shm_unlink(b->name);
            b->unlinked = 1;
        }
}

/* multiprocessing's children end with os._exit, which runs no Py_AtExit
 * function: a process's first block also registers unlink_mine with
 * multiprocessing.util.Finalize, which their _bootstrap runs (and the
 * parent's atexit).  A program without multiprocessing needs none. */
static void unlink_at_multiprocessing_exit(void)
{
    static long registered_pid;
    if (registered_pid == my_pid) return;
    registered_pid = my_pid;
    PyObject *util = PyImport_ImportModule("multiprocessing.util");
    PyObject *m = util ? PyImport_ImportModule("squarefree._squarefree") : NULL;
    PyObject *fn = m ? PyObject_GetAttrString(m, "_unlink_blocks") : NULL;
    PyObject *r =
        fn ? PyObject_CallMethod(util, "Finalize", "OOOi", Py_None, fn, PyTuple_New(0), 0) : NULL;
    if (!r) PyErr_Clear(); /* Py_AtExit remains */
    Py_XDECREF(r);
    Py_XDECREF(fn);
    Py_XDECREF(m);
    Py_XDECREF(util);
}

static PyObject *unlink_blocks(PyObject *unused, PyObject *noargs)
{
    (void)unused;
    (void)noargs;
    unlink_mine();
    Py_RETURN_NONE;
}

static struct shm_block *block_new(void)
{
    static unsigned counter;
    unlink_at_multiprocessing_exit();
    struct shm_block *b = calloc(1, sizeof *b);
    if (!b) return (struct shm_block *)PyErr_NoMemory();
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        snprintf(b->name, sizeof b->name, "/squarefree-%ld-%u-%lx", my_pid, counter++,
                 (unsigned long)(now.tv_nsec ^ ((unsigned long)now.tv_sec << 20)));
        fd = shm_open(b->name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0 || ftruncate(fd, BLOCK_SIZE) < 0) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            shm_unlink(b->name);
        }
        free(b);
        errno = e;
        return (struct shm_block *)PyErr_SetFromErrno(PyExc_OSError);
    }
    void *base = mmap(NULL, BLOCK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (base == MAP_FAILED) {
        shm_unlink(b->name);
        free(b);
        errno = e;
        return (struct shm_block *)PyErr_SetFromErrno(PyExc_OSError);
    }
    b->base = base;
    b->size = BLOCK_SIZE;
    b->creator = my_pid;
    b->next = blocks;
    blocks = b;
    return b;
}

/* The block named `name` (a leading "/" added if missing), mapped once per
 * process: NULL raised (FileNotFoundError when nothing has that name). */
static struct shm_block *block_map(const char *name)
{
    char full[sizeof((struct shm_block *)0)->name];
    if (snprintf(full, sizeof full, "%s%s", name[0] == '/' ? "" : "/", name) >= (int)sizeof full) {
        PyErr_SetString(PyExc_ValueError, "shared-memory name too long");
        return NULL;
    }
    for (struct shm_block *b = blocks; b; b = b->next)
        if (!b->unlinked && strcmp(b->name, full) == 0) return b;
    int fd = shm_open(full, O_RDWR, 0);
    if (fd < 0) return (struct shm_block *)PyErr_SetFromErrnoWithFilename(PyExc_OSError, full);
    struct stat st;
    void *base = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size > 0)
        base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (base == MAP_FAILED) {
        errno = st.st_size > 0 ? e : EINVAL;
        return (struct shm_block *)PyErr_SetFromErrnoWithFilename(PyExc_OSError, full);
    }
    struct shm_block *b = calloc(1, sizeof *b);
    if (!b) {
        munmap(base, (size_t)st.st_size);
        return (struct shm_block *)PyErr_NoMemory();
    }
    strcpy(b->name, full);
    b->base = base;
    b->size = (size_t)st.st_size;
    b->used = b->size;
    b->next = blocks;
    blocks = b;
    return b;
}

static void block_unref(struct shm_block *b)
{
    if (--b->refs > 0) return;
    for (struct shm_block **p = &blocks; *p; p = &(*p)->next)
        if (*p == b) {
            *p = b->next;
            break;
        }
    if (current == b) current = NULL;
    munmap(b->base, b->size);
    if (b->creator == my_pid && !b->unlinked) shm_unlink(b->name);
    free(b);
}

/* Point o's state at base + offset in memory of len bytes: bounds and
 * alignment checked (ValueError), nothing changed on failure. */
static int point_at(ShareableObject *o, char *base, Py_ssize_t len, Py_ssize_t offset, size_t size)
{
    if (offset < 0 || offset > len || (size_t)(len - offset) < size) {
        PyErr_Format(PyExc_ValueError, "%s needs %zu bytes at offset %zd: the memory has %zd bytes",
                     Py_TYPE(o)->tp_name, size, offset, len);
        return -1;
    }
    if ((uintptr_t)(base + offset) % SQF_STATE_ALIGN) {
        PyErr_Format(PyExc_ValueError,
                     "%s's state must be %d-byte aligned: offset %zd of that memory is not",
                     Py_TYPE(o)->tp_name, SQF_STATE_ALIGN, offset);
        return -1;
    }
    o->where.own = o->st;
    o->st = base + offset;
    o->where.offset = offset;
    o->where.shared = 1;
    return 0;
}

/* The caller's memory: a SharedMemory (its buf, and its name for the
 * pickle), or any writable buffer (no name: fork only). */
static int place_in_buffer(ShareableObject *o, PyObject *mem, PyObject *offset_arg, size_t size)
{
    PyObject *buf = mem, *name = NULL;
    Py_ssize_t offset = 0;
    if (offset_arg && offset_arg != Py_None) {
        offset = PyNumber_AsSsize_t(offset_arg, PyExc_OverflowError);
        if (offset == -1 && PyErr_Occurred()) return -1;
    }
    if (!PyObject_CheckBuffer(mem) && PyObject_HasAttrString(mem, "buf")) {
        buf = PyObject_GetAttrString(mem, "buf"); /* multiprocessing's SharedMemory */
        if (!buf) return -1;
        name = PyObject_GetAttrString(mem, "name");
        if (!name || !PyUnicode_Check(name)) {
            Py_XDECREF(name);
            name = NULL;
            PyErr_Clear(); /* no name: fork only */
        }
    } else {
        Py_INCREF(buf);
    }
    Py_buffer view;
    int r = PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE);
    Py_DECREF(buf);
    if (r < 0) {
        Py_XDECREF(name);
        return -1;
    }
    if (point_at(o, view.buf, view.len, offset, size) < 0) {
        PyBuffer_Release(&view);
        Py_XDECREF(name);
        return -1;
    }
    o->where.view = view;
    o->where.name = name;
    return 0;
}

static int no_offset(PyObject *offset)
{
    if (!offset || offset == Py_None) return 0;
    PyErr_SetString(PyExc_ValueError, "offset is for shared=<memory> (a SharedMemory, an mmap "
                                      "or a buffer)");
    return -1;
}

int placement_place(ShareableObject *o, PyObject *shared, PyObject *offset, size_t size)
{
    if (!shared || shared == Py_None || shared == Py_False) return no_offset(offset);
    if (shared != Py_True) return place_in_buffer(o, shared, offset, size);
    if (no_offset(offset) < 0) return -1;
    size_t need = (size + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
    if (!current || current->size - current->used < need) {
        struct shm_block *b = block_new();
        if (!b) return -1;
        current = b;
    }
    PyObject *name = PyUnicode_FromString(current->name);
    if (!name) {
        if (current->refs == 0) { /* a new block that nothing uses */
            current->refs = 1;
            block_unref(current);
        }
        return -1;
    }
    point_at(o, current->base, (Py_ssize_t)current->size, (Py_ssize_t)current->used, size);
    current->used += need;
    current->refs++;
    o->where.block = current;
    o->where.name = name;
    return 0;
}

void placement_done(ShareableObject *o, uint32_t magic)
{
    __atomic_store_n((uint32_t *)o->st, magic, __ATOMIC_RELEASE);
}

void placement_release(ShareableObject *o)
{
    struct placement *w = &o->where;
    if (w->view.obj) PyBuffer_Release(&w->view);
    Py_CLEAR(w->name);
    if (w->block) block_unref(w->block);
    w->block = NULL;
    if (w->own) o->st = w->own;
    w->own = NULL;
    w->shared = 0;
    w->offset = 0;
}

void shareable_dealloc(PyObject *self)
{
    if (Py_TYPE(self)->tp_weaklistoffset) PyObject_ClearWeakRefs(self);
    placement_release((ShareableObject *)self);
    Py_TYPE(self)->tp_free(self);
}

/* --- the types: attach, __reduce__, shared_size, shared ---------------------- */

static const struct kind {
    PyTypeObject *type;
    uint32_t magic;
    size_t size;
} kinds[] = {
    /* subtypes before their bases: the first match names the C type */
    {&BBinSemType, MAGIC_BBINSEM, sizeof(struct sem_state)},
    {&BinSemType, MAGIC_BINSEM, sizeof(struct sem_state)},
    {&BSemType, MAGIC_BSEM, sizeof(struct sem_state)},
    {&SemType, MAGIC_SEM, sizeof(struct sem_state)},
    {&LockType, MAGIC_LOCK, sizeof(struct lock_state)},
    {&RLockType, MAGIC_RLOCK, sizeof(struct lock_state)},
    {&CondType, MAGIC_COND, sizeof(struct cond_state)},
    {&EventType, MAGIC_EVENT, sizeof(struct event_state)},
    {&LatchType, MAGIC_LATCH, sizeof(struct latch_state)},
    {&CountdownType, MAGIC_COUNTDOWN, sizeof(struct countdown_state)},
    {&BarrierType, MAGIC_BARRIER, sizeof(struct barrier_state)},
    {&RobustLockType, MAGIC_ROBUST, sizeof(struct robust_state)},
};

static const struct kind *kind_of(PyObject *cls)
{
    if (PyType_Check(cls))
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
            if (PyType_IsSubtype((PyTypeObject *)cls, kinds[i].type)) return &kinds[i];
    PyErr_Format(PyExc_TypeError, "%R is not a squarefree type that can be shared", cls);
    return NULL;
}

/* A new object of cls, its state not yet placed. */
static ShareableObject *new_of(PyObject *cls)
{
    PyObject *noargs = PyTuple_New(0);
    if (!noargs) return NULL;
    PyObject *o = ((PyTypeObject *)cls)->tp_new((PyTypeObject *)cls, noargs, NULL);
    Py_DECREF(noargs);
    return (ShareableObject *)o;
}

/* o's state is placed: check that a k was initialised there, then give it
 * its process-local extras.  o, or NULL raised (o is dropped). */
static PyObject *attached(ShareableObject *o, const struct kind *k, PyObject *extras)
{
    uint32_t magic = __atomic_load_n((uint32_t *)o->st, __ATOMIC_ACQUIRE);
    if (magic != k->magic) {
        PyErr_Format(PyExc_ValueError, "no %s was initialised at offset %zd of that memory",
                     Py_TYPE(o)->tp_name, o->where.offset);
        Py_DECREF(o);
        return NULL;
    }
    int r = 0;
    if (k->magic == MAGIC_BARRIER) r = barrier_attached((PyObject *)o, extras);
    if (k->magic == MAGIC_COND) r = cond_attached((PyObject *)o, extras);
    if (r < 0) {
        Py_DECREF(o);
        return NULL;
    }
    o->initialised = 1;
    return (PyObject *)o;
}

/* Type.attach(memory, offset=0, *, lock=..., action=None, timeout=None) */
static PyObject *Shareable_attach(PyObject *cls, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"memory", "offset", "lock", "action", "timeout", NULL};
    PyObject *mem, *offset = NULL, *lock = NULL, *action = Py_None, *timeout = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$OOO:attach", kwlist, &mem, &offset, &lock,
                                     &action, &timeout))
        return NULL;
    const struct kind *k = kind_of(cls);
    if (!k) return NULL;
    if ((lock != NULL) != (k->magic == MAGIC_COND)) {
        PyErr_SetString(PyExc_TypeError, k->magic == MAGIC_COND
                                             ? "Condition.attach needs lock= (the shared lock)"
                                             : "lock= is for Condition.attach");
        return NULL;
    }
    if (k->magic != MAGIC_BARRIER && (action != Py_None || timeout != Py_None)) {
        PyErr_SetString(PyExc_TypeError, "action= and timeout= are for Barrier.attach");
        return NULL;
    }
    if (mem == Py_True || mem == Py_None || mem == Py_False) {
        PyErr_SetString(PyExc_TypeError, "attach needs the memory (a SharedMemory, an mmap or a "
                                         "buffer); an object made with shared=True reaches "
                                         "other processes by fork or by pickling");
        return NULL;
    }
    PyObject *extras = k->magic == MAGIC_COND      ? PyTuple_Pack(1, lock)
                       : k->magic == MAGIC_BARRIER ? PyTuple_Pack(2, action, timeout)
                                                   : PyTuple_New(0);
    if (!extras) return NULL;
    ShareableObject *o = new_of(cls);
    if (!o || place_in_buffer(o, mem, offset, k->size) < 0) {
        Py_XDECREF(o);
        Py_DECREF(extras);
        return NULL;
    }
    PyObject *r = attached(o, k, extras);
    Py_DECREF(extras);
    return r;
}

/* _attach_named(cls, name, offset, extras): a pickle's way back. */
static PyObject *attach_named(PyObject *unused, PyObject *args)
{
    (void)unused;
    PyObject *cls, *extras;
    const char *name;
    Py_ssize_t offset;
    if (!PyArg_ParseTuple(args, "OsnO!:_attach_named", &cls, &name, &offset, &PyTuple_Type,
                          &extras))
        return NULL;
    const struct kind *k = kind_of(cls);
    if (!k) return NULL;
    struct shm_block *b = block_map(name);
    if (!b) return NULL;
    b->refs++; /* now o's */
    ShareableObject *o = new_of(cls);
    if (!o) {
        block_unref(b);
        return NULL;
    }
    o->where.block = b;
    if (point_at(o, b->base, (Py_ssize_t)b->size, offset, k->size) < 0 ||
        !(o->where.name = PyUnicode_FromString(b->name))) {
        Py_DECREF(o);
        return NULL;
    }
    return attached(o, k, extras);
}

/* Pickling: a shared object's pickle names its memory and offset, and a
 * process that loads it maps the memory and attaches; its state is never
 * copied.  A private object, or one in memory without a name, cannot be
 * pickled (as threading's primitives cannot). */
static PyObject *Shareable_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    ShareableObject *o = (ShareableObject *)self;
    if (!o->where.shared) {
        PyErr_Format(PyExc_TypeError,
                     "cannot pickle '%s' object: it is private to its process (make it with "
                     "shared=True to pass it to another process)",
                     Py_TYPE(self)->tp_name);
        return NULL;
    }
    if (!o->where.name) {
        PyErr_Format(PyExc_TypeError,
                     "cannot pickle '%s' object: its memory has no name (an mmap or a buffer), "
                     "so only children made by fork can share it; use shared=True or a "
                     "multiprocessing.shared_memory.SharedMemory",
                     Py_TYPE(self)->tp_name);
        return NULL;
    }
    const struct kind *k = kind_of((PyObject *)Py_TYPE(self));
    if (!k) return NULL;
    PyObject *extras = k->magic == MAGIC_BARRIER ? barrier_extras(self)
                       : k->magic == MAGIC_COND  ? cond_extras(self)
                                                 : PyTuple_New(0);
    if (!extras) return NULL;
    static PyObject *fn;
    if (!fn) {
        PyObject *m = PyImport_ImportModule("squarefree._squarefree");
        fn = m ? PyObject_GetAttrString(m, "_attach_named") : NULL;
        Py_XDECREF(m);
        if (!fn) {
            Py_DECREF(extras);
            return NULL;
        }
    }
    PyObject *r = Py_BuildValue("(O(OOnN))", fn, (PyObject *)Py_TYPE(self), o->where.name,
                                o->where.offset, extras);
    return r;
}

static PyObject *Shareable_shared(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(((ShareableObject *)self)->where.shared);
}

static PyMethodDef attach_def = {
    "attach", (PyCFunction)(void (*)(void))Shareable_attach, METH_VARARGS | METH_KEYWORDS,
    "attach(memory, offset=0) -> object\n\nThe object whose state another process initialised "
    "(Type(shared=memory, offset=offset)) in memory this process maps too: a "
    "multiprocessing.shared_memory.SharedMemory, an mmap or any writable buffer, kept "
    "exported while the object lives.  Nothing is initialised: ValueError if no object of "
    "this type was made there.  Condition.attach also takes lock= (the shared Lock or RLock "
    "it was made with, attached in this process), Barrier.attach action= and timeout= (this "
    "process's own)."};

static PyMethodDef reduce_def = {
    "__reduce__", (PyCFunction)Shareable_reduce, METH_NOARGS,
    "A shared object pickles as the name of its shared memory and its offset there: "
    "unpickling in another process maps that memory and attaches (multiprocessing's spawn "
    "and forkserver children get it so).  TypeError for a private object, or one in memory "
    "without a name (it reaches children by fork only)."};

static PyGetSetDef shared_def = {"shared", Shareable_shared, NULL,
                                 "Whether the object's state is in shared memory.", NULL};

static PyMethodDef unlink_blocks_def = {
    "_unlink_blocks", (PyCFunction)unlink_blocks, METH_NOARGS,
    "Unlink the names of the blocks this process made (at its exit; internal)."};

static PyMethodDef attach_named_def = {
    "_attach_named", (PyCFunction)attach_named, METH_VARARGS,
    "_attach_named(cls, name, offset, extras)\n\nUnpickle a shared object (internal)."};

int shared_init(PyObject *m)
{
    my_pid = (long)getpid();
    if (pthread_atfork(NULL, NULL, shared_after_fork) != 0 || Py_AtExit(unlink_mine) < 0) {
        PyErr_SetString(PyExc_RuntimeError, "squarefree: cannot register its shared memory's "
                                            "fork and exit handlers");
        return -1;
    }
    PyTypeObject *bases[] = {&SemType,   &LockType,      &RLockType,   &CondType,      &EventType,
                             &LatchType, &CountdownType, &BarrierType, &RobustLockType};
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        PyTypeObject *t = bases[i];
        PyObject *attach = PyDescr_NewClassMethod(t, &attach_def);
        PyObject *reduce = PyDescr_NewMethod(t, &reduce_def);
        PyObject *shared = PyDescr_NewGetSet(t, &shared_def);
        int r = attach && reduce && shared &&
                        PyDict_SetItemString(t->tp_dict, "attach", attach) == 0 &&
                        PyDict_SetItemString(t->tp_dict, "__reduce__", reduce) == 0 &&
                        PyDict_SetItemString(t->tp_dict, "shared", shared) == 0
                    ? 0
                    : -1;
        Py_XDECREF(attach);
        Py_XDECREF(reduce);
        Py_XDECREF(shared);
        if (r < 0) return -1;
        PyType_Modified(t);
    }
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        PyObject *size = PyLong_FromSize_t(kinds[i].size);
        int r = size ? PyDict_SetItemString(kinds[i].type->tp_dict, "shared_size", size) : -1;
        Py_XDECREF(size);
        if (r < 0) return -1;
        PyType_Modified(kinds[i].type);
    }
    PyObject *modname = PyModule_GetNameObject(m);
    PyMethodDef *defs[] = {&attach_named_def, &unlink_blocks_def};
    for (size_t i = 0; i < 2; i++) {
        PyObject *fn = modname ? PyCFunction_NewEx(defs[i], NULL, modname) : NULL;
        int r = fn ? PyModule_AddObjectRef(m, defs[i]->ml_name, fn) : -1;
        Py_XDECREF(fn);
        if (r < 0) {
            Py_XDECREF(modname);
            return -1;
        }
    }
    Py_XDECREF(modname);
    return 0;
}
