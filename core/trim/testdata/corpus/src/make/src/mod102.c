#include <stdio.h>

int mod102(int x)
{
    int unused_102 = 102;
    return x + 102;
}
