#include <stdio.h>

int mod066(int x)
{
    int unused_66 = 66;
    return x + 66;
}
